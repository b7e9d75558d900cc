import DeskLinux
import DeskPOSIX
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
        guard let address = UnixSocketAddress(path) else { return false }
        let sent = address.withSockaddr { address, length in
            Array(state.utf8).withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
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
