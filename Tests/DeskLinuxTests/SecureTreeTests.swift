import DeskPOSIX
@testable import DeskHost
import DeskLinux
import Glibc
import Testing

/// What a user can leave in a session directory for root to remove: symlinks out of it, FIFOs,
/// sockets, files nobody may read, a tree deeper than any walk holds descriptors for. The tree
/// goes, all of it, and nothing outside it does.
@Suite struct SecureTreeTests {
    static func write(_ path: String, _ text: String, mode: mode_t = 0o644) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { return }
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    @Test func symlinksOutOfTheTreeAreRemovedNotFollowed() throws {
        let scratch = try Scratch()
        // Outside the tree: a directory with a file, and a file, that must survive.
        let outside = scratch.path + "/outside"
        try #require(mkdir(outside, 0o755) == 0)
        Self.write(outside + "/keep", "root's")
        Self.write(scratch.path + "/keep-file", "root's")

        let tree = scratch.path + "/tree"
        try #require(mkdir(tree, 0o700) == 0 && mkdir(tree + "/sub", 0o700) == 0)
        #expect(symlink(outside, tree + "/to-dir") == 0)
        #expect(symlink(outside, tree + "/sub/to-dir") == 0)
        #expect(symlink(scratch.path + "/keep-file", tree + "/to-file") == 0)
        #expect(symlink("../../outside", tree + "/sub/relative") == 0)
        #expect(symlink("/nonexistent", tree + "/dangling") == 0)
        #expect(symlink("loop", tree + "/loop") == 0)
        #expect(mkfifo(tree + "/fifo", 0o600) == 0)
        Self.write(tree + "/sub/unreadable", "no one may read this", mode: 0)
        #expect(chmod(tree + "/sub/unreadable", 0) == 0)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(UnixSocketAddress(tree + "/sub/rfb.sock")!.withSockaddr { bind(fd, $0, $1) } == 0)

        SecureTree.remove(tree)

        #expect(!Self.exists(tree))
        #expect(ProcFS.readText(outside + "/keep") == "root's")
        #expect(ProcFS.readText(scratch.path + "/keep-file") == "root's")
    }

    /// The path itself a symlink: the link goes, the directory it names stays whole.
    @Test func aSymlinkGivenAsTheTreeIsUnlinkedOnly() throws {
        let scratch = try Scratch()
        let target = scratch.path + "/target"
        try #require(mkdir(target, 0o755) == 0)
        Self.write(target + "/keep", "kept")
        #expect(symlink(target, scratch.path + "/link") == 0)
        SecureTree.remove(scratch.path + "/link")
        #expect(!Self.exists(scratch.path + "/link"))
        #expect(ProcFS.readText(target + "/keep") == "kept")
    }

    @Test func aFileOrNothingIsRemovedOrLeftAlone() throws {
        let scratch = try Scratch()
        Self.write(scratch.path + "/file", "x", mode: 0)
        SecureTree.remove(scratch.path + "/file")
        #expect(!Self.exists(scratch.path + "/file"))
        SecureTree.remove(scratch.path + "/missing")   // nothing to do, and no crash
        #expect(Self.exists(scratch.path))
    }

    /// A tree far deeper than the walk holds descriptors for (each level a directory with a file
    /// and a link out) is removed whole. Before, everything below 32 levels stayed behind.
    @Test func aTreeDeeperThanTheWalkIsRemovedWhole() throws {
        let scratch = try Scratch()
        let outside = scratch.path + "/outside"
        try #require(mkdir(outside, 0o755) == 0)
        Self.write(outside + "/keep", "root's")
        let tree = scratch.path + "/tree"
        try #require(mkdir(tree, 0o700) == 0)
        let levels = SecureTree.maxDepth * 20 + 7
        var fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        for level in 0..<levels {
            try #require(fd >= 0)
            #expect(mkdirat(fd, "d", 0o700) == 0)
            if level % 50 == 0 {
                #expect(symlinkat(outside, fd, "out") == 0)
                _ = mkdirat(fd, "side", 0o700)
            }
            let child = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            close(fd)
            fd = child
        }
        #expect(mkfifoat(fd, "fifo", 0o600) == 0)
        close(fd)

        SecureTree.remove(tree)

        #expect(!Self.exists(tree))
        #expect(ProcFS.readText(outside + "/keep") == "root's")
        // Nothing was moved up out of the tree either.
        #expect(Self.entries(scratch.path) == ["outside"])
    }

    static func entries(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
