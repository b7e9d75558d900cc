import Glibc

/// `/tmp/.X11-unix`, where every X server puts its socket.
///
/// If it is missing, the first user's Xvnc creates it owned by that user, who then controls
/// every later user's X socket. deskd makes it root:root 1777 before any start.
public enum XSocketDirectory {
    public static let path = "/tmp/.X11-unix"

    public static func ensure() throws(OSError) {
        var info = stat()
        if lstat(path, &info) != 0 {
            guard mkdir(path, 0o1777) == 0 || errno == EEXIST else { throw OSError("mkdir", path: path) }
        } else if info.st_mode & S_IFMT != S_IFDIR {
            // A file or a symlink someone planted: remove it (unlink does not follow) and make the real one.
            guard unlink(path) == 0, mkdir(path, 0o1777) == 0 else { throw OSError("replace", path: path) }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw OSError("open", path: path) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw OSError("stat", path: path) }
        if info.st_uid != 0 || info.st_gid != 0 {
            guard fchown(fd, 0, 0) == 0 else { throw OSError("chown", path: path) }
        }
        if info.st_mode & 0o7777 != 0o1777 {
            guard fchmod(fd, 0o1777) == 0 else { throw OSError("chmod", path: path) }
        }
    }
}
