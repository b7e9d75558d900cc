import Glibc

/// The job's own directory on the node, 0700: the VNC password file, the X cookie, the desktop's
/// startup script, Xvnc's RFB socket and the logs. Made fresh (mkdtemp) for every job, so nothing
/// an earlier job or another user left in /tmp is ever read or reused; removed at the end.
final class PrivateDirectory {
    let path: String
    /// The directory itself, opened once: every file is made in it through this descriptor, so
    /// the files land here whatever its path comes to name.
    private let fd: Int32

    static let passwordName = "passwd"
    static let xauthorityName = "Xauthority"
    static let xstartupName = "xstartup"
    static let socketName = "rfb.sock"

    var passwordFile: String { path + "/" + Self.passwordName }
    var xauthority: String { path + "/" + Self.xauthorityName }
    var xstartup: String { path + "/" + Self.xstartupName }
    var rfbSocket: String { path + "/" + Self.socketName }

    /// The longest path a Unix socket may have (sun_path, less its NUL).
    static let socketPathLimit = 107

    /// Under $TMPDIR when it is an absolute path to a directory (Slurm sites point it at a
    /// per-job scratch area), else /tmp; /tmp too when $TMPDIR is so deep that the RFB socket's
    /// path would not fit a sockaddr_un, or holds a character other than a letter, a digit or
    /// `/._-`: the path goes unquoted where a compositor splits its startup command at spaces
    /// (labwc's -s) and into a D-Bus address (where `,`, `;` and `%` mean something).
    static func make(temporaryDirectory: String?) throws(JobFailure) -> PrivateDirectory {
        let template = "deskd-job-XXXXXX"
        var parent = "/tmp"
        if let candidate = temporaryDirectory, candidate.hasPrefix("/"), candidate.utf8.allSatisfy(isPlain), isDirectory(candidate) {
            let trimmed = candidate.count > 1 && candidate.hasSuffix("/") ? String(candidate.dropLast()) : candidate
            if (trimmed + "/" + template + "/" + socketName).utf8.count <= socketPathLimit { parent = trimmed }
        }
        var name = Array(((parent == "/" ? "" : parent) + "/" + template).utf8CString)
        guard name.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw JobFailure("could not make the job's directory in \(parent): \(String(cString: strerror(errno))).")
        }
        let path = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            rmdir(path)
            throw JobFailure("could not open the job's directory \(path): \(reason).")
        }
        return PrivateDirectory(path: path, fd: fd)
    }

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "/._-".utf8.contains(byte)
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// A new file `name` holding `bytes`, with exactly `mode` whatever the umask; `replacing`
    /// one of the job's own from before (the cookie names the display, which a retry changes).
    func write(_ name: String, _ bytes: [UInt8], mode: mode_t, replacing: Bool = false) throws(JobFailure) {
        if replacing { unlinkat(fd, name, 0) }
        let file = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard file >= 0 else { throw JobFailure("could not write \(path)/\(name): \(String(cString: strerror(errno))).") }
        defer { close(file) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw JobFailure("could not write \(path)/\(name): \(String(cString: strerror(errno))).") }
            written += n
        }
        guard fchmod(file, mode) == 0 else { throw JobFailure("could not set the mode of \(path)/\(name): \(String(cString: strerror(errno))).") }
    }

    /// A log file for a child's output, appended to; -1 if it cannot be made (the output is
    /// then dropped, which must not stop a desktop).
    func openLog(_ name: String) -> Int32 {
        openat(fd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
    }

    /// Removes the directory and all in it: the job's own files, and whatever the desktop put
    /// there (it knows the path from XAUTHORITY). Nothing is followed: a symlink is removed, not
    /// its target; a subdirectory is entered only as a directory opened without following.
    func remove() {
        Self.empty(directory: fd, depth: 0)
        close(fd)
        rmdir(path)
    }

    /// Deep enough for anything a desktop puts in a scratch directory; beyond it, what is left
    /// stays (and only the rmdir fails).
    private static let depthLimit = 32

    private static func empty(directory: Int32, depth: Int) {
        // fdopendir takes the descriptor over: hand it a copy, the caller closes its own.
        let copy = dup(directory)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names {
            if unlinkat(directory, name, 0) == 0 { continue }
            guard errno == EISDIR, depth < depthLimit else { continue }
            let child = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { continue }
            empty(directory: child, depth: depth + 1)
            close(child)
            unlinkat(directory, name, AT_REMOVEDIR)
        }
    }
}

/// Why the desktop could not be brought up, as the one sentence deskd shows its user.
struct JobFailure: Error {
    let sentence: String
    init(_ sentence: String) { self.sentence = sentence }
}
