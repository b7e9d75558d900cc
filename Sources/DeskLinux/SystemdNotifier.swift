import Glibc

/// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. Under Type=notify,
/// systemd counts deskd as started only once it sends READY=1, which deskd does after the
/// control socket listens, so `systemctl start deskd && deskctl list` never races.
public enum SystemdNotifier {
    /// Sends `state` (for example "READY=1") if systemd asked for notifications; otherwise nothing.
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        guard let path = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !path.isEmpty,
              path.hasPrefix("/") || path.hasPrefix("@")
        else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            if bytes.first == UInt8(ascii: "@") { raw[0] = 0 }  // an abstract socket
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                Array(state.utf8).withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        return sent >= 0
    }

    /// RELOADING=1 must carry the monotonic time (Type=notify-reload and newer systemd check it).
    public static func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        notify("RELOADING=1\nMONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)")
    }
}
