import CDeskShims
import DeskCore
import FoundationEssentials
import Glibc

// deskd-files: one file call of a portal user's, as that user. deskd starts it as root with a
// socket on stdin (a SOCK_SEQPACKET pair's end), sends a `FileHelperRequest` and passes what it
// answers on to its web front: a listing, or a descriptor (a file to read, an upload's unnamed
// file to write, a pipe tar writes a folder into). Before it reads any path it becomes the
// user, for good (`deskd_become_user`): the kernel's permissions, quotas and ACLs decide every
// open, and root follows no path of the user's. Exit status: 0 done, 1 refused or failed, 2 misused.

let channel = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)
// 0-2 become /dev/null: the socket is reached only by its own descriptor.
let null = open("/dev/null", O_RDWR)
for fd in Int32(0)...2 { dup2(null, fd) }
if null > 2 { close(null) }

func send(_ answer: FileAnswer, descriptor: Int32? = nil) {
    let bytes = (try? Array(JSONEncoder().encode(answer))) ?? []
    let fds = descriptor.map { [$0] } ?? []
    _ = bytes.withUnsafeBytes { buffer in
        fds.withUnsafeBufferPointer { deskd_send_record(channel, buffer.baseAddress, buffer.count, $0.baseAddress, Int32($0.count), 0) }
    }
}

func refuse(_ reason: FileRefusal.Reason, _ sentence: String) -> Never {
    send(.refused(FileRefusal(reason, sentence)))
    exit(1)
}

/// The next record, without descriptors (deskd passes none); nil at the socket's end.
func receive() -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: FileHelperRequest.recordLimit + 1)
    var fds = [Int32](repeating: -1, count: Int(DESKD_MAX_PASSED_FDS))
    var count: Int32 = 0
    let n = buffer.withUnsafeMutableBytes { bytes in
        fds.withUnsafeMutableBufferPointer { deskd_receive_record(channel, bytes.baseAddress, bytes.count, $0.baseAddress, &count) }
    }
    for fd in fds.prefix(Int(count)) { close(fd) }
    guard n > 0, n <= FileHelperRequest.recordLimit else { return nil }
    return Array(buffer[..<n])
}

guard channel >= 0, geteuid() == 0 else {
    let line = "deskd-files: deskd starts this as root, with its socket on stdin, for each file call of the portal.\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(2)
}
// A call nobody finishes ends: deskd ends it long before, with the transfer.
guard let first = receive(), let request = try? JSONDecoder().decode(FileHelperRequest.self, from: Data(first)) else { exit(2) }
guard request.uid != 0, deskd_become_user(request.user, request.uid, request.gid) == 0 else {
    refuse(.failed, "The files of \(request.user) cannot be reached as that account now; try again, or ask the administrator.")
}
// What an upload makes is the owner's alone (0600, a new upload folder 0700) until they share
// it; a replaced file keeps its mode (FileOps.commit). The user's login umask is not known here.
umask(0o077)
// O_PATH (Glibc's module leaves it out): a home the user may search but not read still leads on.
let home = open(request.home, 0o10000000 | O_DIRECTORY | O_CLOEXEC)
guard home >= 0 else { refuse(.notPermitted, "Your home folder, \(request.home), cannot be opened.") }

switch request.call {
case .list(let path):
    let folder = FileOps.openFolder(path, in: home)
    send(.listing(FileOps.list(folder, path: path)))
case .download(let path):
    FileOps.download(path, in: home, home: request.home, user: request.user)
case .upload(let folder, let name, let size, let exists, let createFolder):
    FileOps.upload(name, size: size, exists: exists, into: folder, in: home, create: createFolder)
}
exit(0)
