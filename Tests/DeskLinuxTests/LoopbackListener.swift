@testable import DeskLinux
import Glibc

/// A TCP listener on 127.0.0.1 at a port the kernel picks, for tests that need a real socket.
final class LoopbackListener {
    let fd: Int32
    let port: Int

    /// nil if the socket could not be bound (the test then says so).
    init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard InternetSocketAddress.loopback(port: 0).withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 1) == 0,
              let port = InternetSocketAddress.boundPort(of: fd)
        else { close(fd); return nil }
        self.fd = fd
        self.port = port
    }

    deinit { close(fd) }
}
