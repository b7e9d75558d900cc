import CDeskShims
import DeskCore
import DeskSessionProtocol
import Glibc

/// The file calls themselves, run as the user (main.swift has become them by now). A failure
/// answers with one sentence (`refuse`) and ends the process.
enum FileOps {
    /// A folder of the home, open for reading its entries.
    static func openFolder(_ path: HomePath, in home: Int32) -> Int32 {
        let fd = open(path, in: home, flags: O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { refuseErrno(errno, path) }
        return fd
    }

    static func open(_ path: HomePath, in home: Int32, flags: Int32) -> Int32 {
        openat(home, path.text.isEmpty ? "." : path.text, flags | O_CLOEXEC | O_NOCTTY)
    }

    static func refuseErrno(_ error: Int32, _ path: HomePath, writing: Bool = false) -> Never {
        switch error {
        case ENOENT: refuse(.notFound, "\(path) does not exist; it may have been moved or removed.")
        case ENOTDIR: refuse(.notFound, "\(path) is not a folder.")
        case EISDIR: refuse(.notPermitted, "\(path) is a folder; pick a file, or download the folder as an archive.")
        case EACCES, EPERM: refuse(.notPermitted, "You may not \(writing ? "write to" : "open") \(path).")
        case ENOSPC: refuse(.diskFull, "The disk that holds \(path) is full; free some space and try again.")
        case EDQUOT: refuse(.quota, "Your disk quota is reached; remove some files and try again.")
        case ENAMETOOLONG: refuse(.badName, "\(path) is too long a name.")
        case EROFS: refuse(.notPermitted, "\(path) is on a read-only file system.")
        case ELOOP: refuse(.notFound, "\(path) goes through too many symbolic links.")
        default: refuse(.failed, "\(path) could not be opened (\(String(cString: strerror(error)))).")
        }
    }

    // MARK: Listing

    static func list(_ folder: Int32, path: HomePath) -> FileListing {
        guard let directory = fdopendir(folder) else { refuseErrno(errno, path) }
        defer { closedir(directory) }
        var entries: [FileEntry] = []
        var truncated = false
        var bytes = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            guard entries.count < FileListing.limit else {
                truncated = true
                break
            }
            var status = stat()
            guard fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let kind = Self.kind(status.st_mode)
            var target: FileEntry.Kind?
            if kind == .link {
                var followed = stat()
                target = fstatat(folder, name, &followed, 0) == 0 ? Self.kind(followed.st_mode) : nil
            }
            let entry = FileEntry(name: name, type: kind, size: UInt64(max(0, status.st_size)), modified: Int64(status.st_mtim.tv_sec), target: target)
            bytes += entry.wireBytesAtMost
            guard bytes <= FileListing.byteBudget else {
                truncated = true
                break
            }
            entries.append(entry)
        }
        return FileListing(path: path, entries: entries, truncated: truncated)
    }

    static func kind(_ mode: mode_t) -> FileEntry.Kind {
        switch mode & S_IFMT {
        case S_IFREG: .file
        case S_IFDIR: .directory
        case S_IFLNK: .link
        default: .other
        }
    }

    // MARK: Download

    /// A file: its descriptor. A folder: a pipe, and this process becomes tar writing the folder
    /// into it (POSIX pax format, symbolic links stored as links, never followed).
    static func download(_ path: HomePath, in home: Int32, home homePath: String, user: String) {
        // O_NONBLOCK: a FIFO the user made must not hold the call open; it is refused below.
        let fd = open(path, in: home, flags: O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { refuseErrno(errno, path) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { refuseErrno(errno, path) }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            let name = path.split?.name ?? FileName("file")!
            send(.file(name: name, size: UInt64(max(0, status.st_size)), modified: Int64(status.st_mtim.tv_sec)), descriptor: fd)
        case S_IFDIR:
            archive(path, folder: fd, home: home, user: user)
        default:
            refuse(.notPermitted, "\(path) is neither a file nor a folder, and cannot be downloaded.")
        }
    }

    private static func archive(_ path: HomePath, folder: Int32, home: Int32, user: String) -> Never {
        // tar runs in the folder's parent and names the folder, so the archive unpacks into one
        // folder of that name; the home itself is archived as "USER".
        let (parent, member, name): (Int32, String, FileName)
        if let (up, last) = path.split {
            let fd = open(up, in: home, flags: O_RDONLY | O_DIRECTORY)
            guard fd >= 0 else { refuseErrno(errno, up) }
            (parent, member, name) = (fd, last.text, FileName(last.text + ".tar") ?? FileName("folder.tar")!)
        } else {
            (parent, member, name) = (folder, ".", FileName(user + ".tar") ?? FileName("home.tar")!)
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0 else { refuse(.failed, "The archive of \(path) could not be started.") }
        guard fchdir(parent) == 0 else { refuseErrno(errno, path) }
        // The folder's name reaches tar on its stdin, not in its argv, which every user can read
        // in ps; one name of at most 255 bytes fits a pipe's buffer, so this write cannot block.
        // Made before the answer goes, so a failure here is a refusal, not an empty archive.
        var names: [Int32] = [-1, -1]
        guard pipe(&names) == 0 else { refuse(.failed, "The archive of \(path) could not be started.") }
        let written = member.withCString { write(names[1], $0, strlen($0) + 1) }  // the name and its NUL
        guard written == member.utf8.count + 1 else { refuse(.failed, "The archive of \(path) could not be started.") }
        close(names[1])
        send(.archive(name: name), descriptor: ends[0])
        close(ends[0])
        dup2(names[0], STDIN_FILENO)
        close(names[0])
        // tar's stdout is the pipe; its messages (a file it may not read) go nowhere: the archive
        // carries what the user may read, as tar run by them would.
        dup2(ends[1], STDOUT_FILENO)
        close(ends[1])
        let arguments = ["tar", "--create", "--format=posix", "--file=-", "--null", "--verbatim-files-from", "--no-unquote", "--files-from=-"]
        let environment = ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
        arguments.withCStringArray { argv in
            environment.withCStringArray { envp in _ = execve("/usr/bin/tar", argv, envp) }
        }
        exit(1)
    }

    // MARK: Upload

    /// The new file, unnamed, for deskd-web to write; then, once deskd says the bytes are all
    /// there, its name. Abandoned (the socket ends without a commit), it leaves nothing.
    static func upload(_ name: FileName, size: UInt64, exists: ExistingName, into folderPath: HomePath, in home: Int32, create: Bool) {
        var folder = open(folderPath, in: home, flags: O_RDONLY | O_DIRECTORY)
        if folder < 0, errno == ENOENT, create, let (up, last) = folderPath.split {
            let parent = open(up, in: home, flags: O_RDONLY | O_DIRECTORY)
            if parent >= 0, mkdirat(parent, last.text, 0o700) == 0 || errno == EEXIST {
                folder = openat(parent, last.text, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
        }
        guard folder >= 0 else { refuseErrno(errno, folderPath) }
        let target = folderPath.appending(name)
        var existing = stat()
        let taken = fstatat(folder, name.text, &existing, AT_SYMLINK_NOFOLLOW) == 0
        if taken, exists == .ask {
            refuse(.exists, "\(target) exists: keep both, or replace it.")
        }
        if taken, exists == .replace, existing.st_mode & S_IFMT == S_IFDIR {
            refuse(.exists, "\(target) is a folder; it cannot be replaced by a file. Keep both, or pick another name.")
        }
        var space = statvfs()
        if fstatvfs(folder, &space) == 0, UInt64(space.f_bavail) * UInt64(space.f_frsize) < size {
            refuse(.diskFull, "The disk that holds \(folderPath) has too little space for \(name) (\(size) bytes); free some and try again.")
        }
        // Unnamed where the file system can (ext4, xfs, btrfs, tmpfs); elsewhere a hidden name of
        // this process's, removed when the upload is abandoned.
        var partName: String?
        var fd = deskd_open_unnamed(folder, 0o666)
        if fd < 0 {
            guard errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL else { refuseErrno(errno, folderPath, writing: true) }
            let hidden = ".\(name.text.prefix(200)).deskd-upload-\(getpid())"
            fd = openat(folder, hidden, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            guard fd >= 0 else { refuseErrno(errno, folderPath, writing: true) }
            partName = hidden
        }
        func abandon() {
            if let partName { unlinkat(folder, partName, 0) }
        }
        if size > 0, deskd_reserve(fd, size) != 0, errno == ENOSPC || errno == EDQUOT {
            let error = errno
            abandon()
            refuseErrno(error, folderPath, writing: true)
        }
        send(.uploadReady, descriptor: fd)
        guard let next = receive(), next == FileHelperRequest.commit else {
            abandon()
            exit(1)
        }
        var written = stat()
        guard fstat(fd, &written) == 0, UInt64(written.st_size) == size else {
            abandon()
            refuse(.failed, "\(name) arrived incomplete; upload it again.")
        }
        guard fsync(fd) == 0 else {
            let error = errno
            abandon()
            refuseErrno(error, folderPath, writing: true)
        }
        send(.committed(name: commit(fd, partName: partName, as: name, exists: exists, in: folder, folderPath: folderPath)))
    }

    /// Names the whole upload: `name` if free (or replaced), else the first free "name (N)".
    private static func commit(_ fd: Int32, partName: String?, as name: FileName, exists: ExistingName, in folder: Int32, folderPath: HomePath) -> FileName {
        func place(_ candidate: FileName) -> Int32 {
            if let partName { return deskd_rename_noreplace(folder, partName, folder, candidate.text) == 0 ? 0 : errno }
            return deskd_name_unnamed(fd, folder, candidate.text) == 0 ? 0 : errno
        }
        if exists == .replace {
            // The new file takes the old one's permissions: a private file stays private, a
            // shared one shared. Named beside it first, then renamed over it: the old file is
            // there until the new one takes its place in one step.
            var old = stat()
            if fstatat(folder, name.text, &old, AT_SYMLINK_NOFOLLOW) == 0, old.st_mode & S_IFMT == S_IFREG {
                // Its group too: 0640 means something else in the owner's primary group. Where
                // the owner may not give it that group, the group gets nothing.
                let mode = fchown(fd, uid_t.max, old.st_gid) == 0 ? old.st_mode & 0o777 : old.st_mode & 0o707
                _ = fchmod(fd, mode)
            }
            let beside = partName ?? ".\(name.text.prefix(200)).deskd-upload-\(getpid())"
            if partName == nil {
                unlinkat(folder, beside, 0)
                guard deskd_name_unnamed(fd, folder, beside) == 0 else { refuseErrno(errno, folderPath, writing: true) }
            }
            guard renameat(folder, beside, folder, name.text) == 0 else {
                let error = errno
                unlinkat(folder, beside, 0)
                refuseErrno(error, folderPath.appending(name), writing: true)
            }
            return name
        }
        // "ask" was free when the upload began; taken meanwhile, it keeps both rather than lose the bytes.
        var candidate = name
        for number in 1...1000 {
            let error = place(candidate)
            if error == 0 { return candidate }
            guard error == EEXIST, let next = name.copy(number) else {
                if let partName { unlinkat(folder, partName, 0) }
                refuseErrno(error, folderPath.appending(candidate), writing: true)
            }
            candidate = next
        }
        if let partName { unlinkat(folder, partName, 0) }
        refuse(.exists, "\(folderPath.appending(name)) and a thousand copies of it exist; pick another name.")
    }
}
