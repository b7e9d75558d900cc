import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Testing

/// deskd runs as root and acts for users: nothing a user plants in their home may make it
/// read, create, truncate, chmod or chown a file beyond that user's reach.
extension EndToEnd {
@Suite struct HostileHomeTests {
    /// Everything about a file an attack could change.
    struct FileState: Equatable, CustomStringConvertible {
        let uid: uid_t, gid: gid_t, mode: mode_t, size: Int, modified: Int, bytes: [UInt8]

        init?(_ path: String) {
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }
            uid = info.st_uid
            gid = info.st_gid
            mode = info.st_mode
            size = Int(info.st_size)
            modified = info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec
            bytes = info.st_mode & S_IFMT == S_IFREG ? (FileManager.default.contents(atPath: path).map(Array.init) ?? []) : []
        }

        var description: String { "uid \(uid) gid \(gid) mode \(String(mode, radix: 8)) size \(size)" }
    }

    /// Root-owned files and a root-only directory that a hostile home points at.
    struct Targets {
        let directory: String
        let secret: String
        let rootFile: String

        init() throws {
            directory = "/var/tmp/deskt-target-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            secret = directory + "/secret"
            rootFile = directory + ".file"
            try Data("root's secret\n".utf8).write(to: URL(fileURLWithPath: secret))
            chmod(secret, 0o600)
            try Data("#!/bin/sh\necho root's script\n".utf8).write(to: URL(fileURLWithPath: rootFile))
            chmod(rootFile, 0o644)
            // What the attack would hit if deskd followed the links: passwd, xstartup, config inside ~/.vnc.
            for name in ["passwd", "xstartup", "config"] {
                try Data("root-owned \(name)\n".utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
                chmod(directory + "/" + name, 0o600)
            }
        }

        var paths: [String] { [directory, secret, rootFile] + ["passwd", "xstartup", "config"].map { directory + "/" + $0 } }
        func snapshot() -> [String: FileState] { Dictionary(uniqueKeysWithValues: paths.compactMap { path in FileState(path).map { (path, $0) } }) }
        func listing() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted() }

        func remove() {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: rootFile)
        }
    }

    enum Home: String, CaseIterable {
        case vncDirectoryIsASymlinkToRoot = "~/.vnc is a symlink to a root-only directory"
        case vncFilesAreSymlinksToRoot = "~/.vnc/passwd, xstartup and config are symlinks to root's files"
        case ownedBySomeoneElse = "the home belongs to root"
        case missing = "the home does not exist"
        case readOnly = "the home is read-only (0555)"
    }

    /// Sets up one hostile home for `account` (whose home is `home`); returns how to undo it.
    static func prepare(_ kind: Home, account: UserAccount, targets: Targets) throws -> () -> Void {
        let home = account.home
        let vnc = home + "/.vnc"
        try? FileManager.default.removeItem(atPath: vnc)
        switch kind {
        case .vncDirectoryIsASymlinkToRoot:
            try FileManager.default.createSymbolicLink(atPath: vnc, withDestinationPath: targets.directory)
            lchown(vnc, account.uid, account.gid)
            return { try? FileManager.default.removeItem(atPath: vnc) }
        case .vncFilesAreSymlinksToRoot:
            try FileManager.default.createDirectory(atPath: vnc, withIntermediateDirectories: false)
            chown(vnc, account.uid, account.gid)
            for (name, target) in [("passwd", targets.secret), ("xstartup", targets.rootFile), ("config", targets.directory + "/config")] {
                try FileManager.default.createSymbolicLink(atPath: vnc + "/" + name, withDestinationPath: target)
                lchown(vnc + "/" + name, account.uid, account.gid)
            }
            return { try? FileManager.default.removeItem(atPath: vnc) }
        case .ownedBySomeoneElse:
            chown(home, 0, 0)
            chmod(home, 0o755)
            return { chown(home, account.uid, account.gid); chmod(home, 0o755) }
        case .missing:
            try TestUsers.run("/usr/sbin/usermod", ["--home", home + "-missing", account.name])
            return { _ = try? TestUsers.run("/usr/sbin/usermod", ["--home", home, account.name]) }
        case .readOnly:
            chmod(home, 0o555)
            return { chmod(home, 0o755) }
        }
    }

    @Test(arguments: Home.allCases)
    func aHostileHomeNeitherStopsTheStartNorReachesRootsFiles(_ kind: Home) throws {
        let mallory = try TestUsers.ensure("deskt-mallory")
        let targets = try Targets()
        // A missing home is refused by default (LoginAccountTests); here deskd is told to go on,
        // so what it does with the home that is not there is what is tested.
        let daemon = try DaemonUnderTest(config: kind == .missing ? "[limits]\nrequire_login_shell = false\n" : "")
        defer { daemon.shutDown(); TestUsers.reap(mallory); targets.remove() }
        let undo = try Self.prepare(kind, account: mallory, targets: targets)
        defer { undo() }
        let before = targets.snapshot()
        let listingBefore = targets.listing()

        // An admin starts it, then Mallory starts one herself: both work, with a working password.
        let byAdmin = try daemon.start(mallory.name)
        let byHerself = try daemon.start(mallory.name, as: mallory.name)
        for session in [byAdmin, byHerself] {
            #expect(session.state == .ready, "\(kind.rawValue): \(daemon.logText)")
            let viewer = try VNCConnection(session.endpoint, password: session.password)
            #expect(viewer.info.width == 1920)
            viewer.close()
            #expect(try daemon.deskctl(["passwd", session.display.description, "--json"], as: mallory.name).status == 0)
            #expect(try daemon.deskctl(["probe", session.display.description]).status == 0)
        }
        #expect(try daemon.deskctl(["kill", "--all"]).status == 0)
        #expect(eventually { TestUsers.processes(of: mallory).isEmpty })

        // Not a byte, owner, mode or timestamp of root's files changed, and nothing new appeared.
        #expect(targets.snapshot() == before, "\(kind.rawValue)")
        #expect(targets.listing() == listingBefore, "\(kind.rawValue)")
        #expect(!daemon.logText.contains("root's secret"))
    }

    /// The session directory is the user's (Xvnc, running as the user, binds its RFB socket
    /// there), but its parent and the display's link are root's, and root follows nothing the
    /// user plants in it: the user may swap every file for a symlink to a root file.
    @Test func sessionFilesAreTheUsersAndRootFollowsNothingPlantedInThem() throws {
        let mallory = try TestUsers.ensure("deskt-mallory")
        let targets = try Targets()
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(mallory); targets.remove() }
        let session = try daemon.start(mallory.name)
        let link = daemon.runtimeDirectory + "/displays/\(session.display.number)"
        let directory = daemon.runtimeDirectory + "/by-id/\(session.id)"

        #expect(try #require(FileState(link)).mode & S_IFMT == S_IFLNK && FileState(link)?.uid == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "../by-id/\(session.id)")
        let parent = try #require(FileState(daemon.runtimeDirectory + "/by-id"))
        #expect(parent.uid == 0 && parent.mode & 0o7777 == 0o711)
        let dir = try #require(FileState(directory))
        #expect(dir.uid == mallory.uid && dir.mode & 0o7777 == 0o700)
        for (name, mode) in [("passwd", 0o600), ("Xauthority", 0o600), ("xstartup", 0o700), ("rfb.sock", 0o600)] {
            let file = try #require(FileState(directory + "/" + name))
            #expect(file.uid == mallory.uid && file.mode & 0o7777 == mode_t(mode), "\(name): \(file)")
        }
        // The logs are not hers to replace: root's, under the state directory.
        let logs = daemon.stateDirectory + "/logs/\(mallory.uid)/\(session.id)"
        #expect(FileState(directory + "/Xvnc.log") == nil)
        #expect(try #require(FileState(logs)).uid == 0 && (FileState(logs)?.mode ?? 0) & 0o7777 == 0o700)
        #expect(try #require(FileState(logs + "/server.log")).uid == 0)

        // Mallory swaps her files for links to root's and lets deskd work on the session.
        let before = targets.snapshot()
        let swap = "for f in passwd Xauthority; do ln -sf '\(targets.secret)' \"$0/$f\"; done; ln -sf '\(daemon.socket)' \"$0/rfb.sock\""
        #expect(try TestUsers.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/bin/sh", "-c", swap, directory]) == 0)
        let probe = try daemon.deskctl(["probe", session.display.description])
        #expect(probe.status != 0)
        #expect(probe.stderr.contains("is a symlink"), "\(probe.stderr)")
        #expect(try daemon.deskctl(["passwd", session.display.description]).status == 0)
        #expect(try #require(FileState(directory + "/passwd")).mode & S_IFMT == S_IFREG)
        _ = try daemon.deskctl(["list", "--all"])
        #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
        #expect(targets.snapshot() == before)
        #expect(!daemon.logText.contains("root's secret"))
        #expect(FileState(directory) == nil && FileState(link) == nil)
    }

    @Test func theXSocketDirectoryIsMadeRootsBeforeAStart() throws {
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(mallory) }
        // Had Mallory's Xvnc created /tmp/.X11-unix, she would own every later user's X socket.
        chown(XSocketDirectory.path, mallory.uid, mallory.gid)
        chmod(XSocketDirectory.path, 0o755)
        defer { chown(XSocketDirectory.path, 0, 0); chmod(XSocketDirectory.path, 0o1777) }
        _ = try daemon.start(mallory.name)
        let directory = try #require(FileState(XSocketDirectory.path))
        #expect(directory.uid == 0 && directory.gid == 0 && directory.mode & 0o7777 == 0o1777)
    }
}
}
