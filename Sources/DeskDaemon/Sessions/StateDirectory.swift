import DeskLinux
import Glibc

/// The runtime directory, its two subdirectories and the persistent state directory, made
/// root-owned and checked: deskd refuses to run on a directory someone else controls.
enum StateDirectory {
    static func prepare(_ configuration: DaemonConfiguration) throws(OSError) {
        for (path, mode) in [(configuration.runtimeDirectory, mode_t(0o755)),
                             (configuration.stateDirectory, 0o700),
                             (configuration.sessionRecordsDirectory, 0o700),
                             (configuration.sessionLogsDirectory, 0o700),
                             // Users traverse by-id to reach their own 0700 directory, and list displays.
                             (configuration.sessionDirectories.byID, 0o711),
                             (configuration.sessionDirectories.displays, 0o755)] {
            if mkdir(path, mode) != 0 && errno != EEXIST { throw OSError("mkdir", path: path) }
            var info = stat()
            guard lstat(path, &info) == 0 else { throw OSError("stat", path: path) }
            guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
                throw OSError("refusing state directory not owned by deskd's user (or a symlink)", path: path, errno: EPERM)
            }
            chmod(path, mode)
        }
    }
}
