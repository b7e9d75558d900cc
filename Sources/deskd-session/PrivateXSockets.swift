import CDeskShims
import Glibc

/// A desktop's X server is its owner's alone, to connect to as well as to use (issue 48). An X
/// server's connections are taken before anyone authenticates, so anyone who can connect can
/// fill its client table (about 250 idle connections) and the owner's own programs get "Maximum
/// number of clients reached". Authentication cannot help; only who can connect at all can.
///
/// - Xvnc gets `-nolisten local`: no abstract socket, which any process on the host may
///   connect to (abstract names have no permissions; they belong to the network namespace).
/// - deskd-session holds that abstract name itself, bound and never listening, for as long as
///   the session runs: a client that tries it (libxcb does, first) is refused at once and goes
///   on to the file, and nobody else can bind the name and play the display's X server to the
///   owner's programs. Someone who holds it already makes the display taken (deskd tries the
///   next one).
/// - The session runs in a mount namespace of its own in which /tmp/.X11-unix is a directory in
///   the session's 0700 directory: Xvnc's socket file is there, where only the owner (and
///   root) can reach it. Mounts stay slave to the host's, so what the host mounts the desktop
///   sees; what the desktop mounts (a FUSE file system) the owner's other logins do not.
/// - For the owner's other logins (ssh, a terminal on the host), the host's /tmp/.X11-unix/XN
///   is root's symlink to that socket: connect() follows it, and the 0700 directory on the way
///   refuses everyone but the owner.
struct PrivateXSockets {
    static let hostDirectory = "/tmp/.X11-unix"

    /// The session's own socket directory (in its 0700 directory, the owner's).
    let directory: String
    /// The X display, for an X desktop; nil for a Wayland one (its compositor picks Xwayland's).
    let display: Int?
    /// The host's /tmp/.X11-unix, opened before the session's namespace hides it.
    private var host: Int32 = -1
    private var abstractHold: Int32 = -1

    init(directory: String, display: Int?) {
        self.directory = directory
        self.display = display
    }

    /// Why the display cannot be this session's (someone else holds its abstract name).
    struct Taken: Error { let sentence: String }

    /// Takes the display's abstract name, links the host's socket name to the session's socket,
    /// then moves this process (and so every process of the session) into the private namespace.
    /// Throws `Taken`, or a sentence for anything else.
    mutating func enter(owner uid: uid_t) throws {
        host = try Self.openHostDirectory()
        if let display {
            abstractHold = try Self.holdAbstractName(display)
            try link(display)
        }
        guard deskd_enter_private_mounts() == 0 else {
            throw Failure("cannot give the session a mount namespace of its own: \(String(cString: strerror(errno)))")
        }
        // Both ends are opened in the new namespace (a descriptor from the host's names a mount
        // this one cannot mount on or from). The session's directory is the owner's: its
        // X11-unix is opened without following a link, checked to be the owner's directory, and
        // mounted by descriptor; the mount point is checked to be root's.
        var info = stat()
        let source = deskd_open_directory_path(directory)
        defer { if source >= 0 { close(source) } }
        guard source >= 0, fstat(source, &info) == 0, info.st_uid == uid, info.st_mode & S_IFMT == S_IFDIR else {
            throw Failure("the session's X socket directory \(directory) is not its owner's directory")
        }
        let target = try Self.openHostDirectory()
        defer { close(target) }
        guard mount("/proc/self/fd/\(source)", "/proc/self/fd/\(target)", nil, UInt(MS_BIND), nil) == 0 else {
            throw Failure("cannot mount the session's X socket directory on \(Self.hostDirectory): \(String(cString: strerror(errno)))")
        }
    }

    /// After the session: the host's name for the socket goes, if it is still this session's link.
    func leave() {
        guard host >= 0, let display else { return }
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlinkat(host, "X\(display)", &target, target.count - 1)
        if n > 0, String(decoding: target[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == socketPath(display) {
            unlinkat(host, "X\(display)", 0)
        }
    }

    private func socketPath(_ display: Int) -> String { directory + "/X\(display)" }

    /// /tmp/.X11-unix as an O_PATH descriptor (enough for the *at calls and for a mount), its
    /// last component not followed, and only if it is root's directory.
    private static func openHostDirectory() throws -> Int32 {
        let fd = deskd_open_directory_path(hostDirectory)
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0, info.st_uid == 0 else {
            if fd >= 0 { close(fd) }
            throw Failure("\(hostDirectory) is missing or not root's; deskd makes it root's 1777 before a start, so start again")
        }
        return fd
    }

    /// Bound, never listening: a connect is refused (ECONNREFUSED), which sends libxcb on to the
    /// socket file, and the name is nobody else's while this process lives. (The address is
    /// written here rather than with DeskPOSIX's UnixSocketAddress, which would bring DeskCore
    /// into this small root helper.)
    static func holdAbstractName(_ display: Int) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("\(hostDirectory)/X\(display)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0
            for (index, byte) in name.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            let error = errno
            close(fd)
            if error == EADDRINUSE {
                throw Taken(sentence: "another process holds display :\(display)'s X socket name (@\(hostDirectory)/X\(display))")
            }
            throw Failure("cannot hold display :\(display)'s X socket name: \(String(cString: strerror(error)))")
        }
        return fd
    }

    /// /tmp/.X11-unix/XN → the session's socket. Made under a random temporary name, then
    /// moved into place: onto a free name, or swapped (atomically) with whatever was planted
    /// there, a socket, a file or a directory of another user's (root may, in a sticky
    /// directory), which then goes, or stays under the temporary name if it is a directory
    /// with something in it. Nobody but root can remove or replace the link afterwards.
    /// Throws `Taken` when it cannot be made: without it the owner's programs outside the
    /// desktop (other logins, `systemd --user`) would miss the display, or reach a socket
    /// someone planted under its name.
    private func link(_ display: Int) throws {
        let name = "X\(display)"
        var failure: Int32 = 0
        for _ in 0..<8 {
            let temporary = ".X\(display)-deskd-\(UInt64.random(in: 0...UInt64.max))"
            guard symlinkat(socketPath(display), host, temporary) == 0 else {
                failure = errno
                if failure == EEXIST { continue }
                break
            }
            if deskd_rename_noreplace(host, temporary, host, name) == 0 { return }
            failure = errno
            if failure == EEXIST {
                if deskd_rename_exchange(host, temporary, host, name) == 0 {
                    // What was planted is now under the temporary name.
                    if unlinkat(host, temporary, 0) != 0 { unlinkat(host, temporary, AT_REMOVEDIR) }
                    return
                }
                failure = errno
            }
            unlinkat(host, temporary, 0)
            if failure != ENOENT { break }   // the name went between the two renames: again
        }
        throw Taken(sentence: "cannot link \(Self.hostDirectory)/\(name) to the session's socket: \(String(cString: strerror(failure)))")
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
