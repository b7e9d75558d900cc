import DeskLinux
import Glibc

/// Removal of a directory tree that never follows a symlink: everything below is opened
/// relative to its parent's descriptor with O_NOFOLLOW, and symlinks are unlinked, not entered.
///
/// The walk holds one descriptor per level, so it goes at most `maxDepth` levels down; a
/// directory deeper than that (a user can nest thousands in a session directory) is moved up to
/// the top of the tree, by a rename that never follows a link either, and emptied on the next
/// pass. So a tree of any depth is removed whole, with bounded descriptors and stack.
public enum SecureTree {
    static let maxDepth = 32
    /// Each pass takes `maxDepth - 1` more levels off the deepest branch: enough for any tree
    /// that stands still, and an end for one that something keeps growing.
    static let maxPasses = 4096

    public static func remove(_ path: String) {
        guard unlink(path) != 0 else { return }   // a file or a symlink: gone
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        var moved = 0
        for _ in 0..<maxPasses {
            let before = moved
            removeContents(of: fd, top: fd, depth: 0, moved: &moved)
            if moved == before { break }
        }
        close(fd)
        rmdir(path)
    }

    /// Empties the directory `dirFD`, `depth` levels below `top`; counts in `moved` the
    /// directories moved up to `top` because they lie too deep.
    private static func removeContents(of dirFD: Int32, top: Int32, depth: Int, moved: inout Int) {
        let listing = dup(dirFD)
        guard listing >= 0 else { return }
        guard let dir = fdopendir(listing) else { close(listing); return }
        rewinddir(dir)   // the duplicate shares the offset of an earlier pass's listing
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)   // before descending: one descriptor per level, not two
        for name in names where unlinkat(dirFD, name, 0) != 0 && errno == EISDIR {
            if depth + 1 >= maxDepth {
                if moveUp(name, from: dirFD, to: top, number: moved) { moved += 1 }
                continue
            }
            let child = openat(dirFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 {
                removeContents(of: child, top: top, depth: depth + 1, moved: &moved)
                close(child)
            }
            unlinkat(dirFD, name, AT_REMOVEDIR)
        }
    }

    /// Renames `name` in `dirFD` to a fresh name in `top`. (Renaming over an empty directory
    /// replaces it, which removes nothing the walk would not; a taken name is skipped.)
    private static func moveUp(_ name: String, from dirFD: Int32, to top: Int32, number: Int) -> Bool {
        for attempt in 0..<8 {
            let target = ".deskd-deep-\(number)-\(attempt)-\(UInt32.random(in: 0...UInt32.max))"
            if renameat(dirFD, name, top, target) == 0 { return true }
            guard errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR || errno == EISDIR else { return false }
        }
        return false
    }
}
