import FoundationEssentials

/// The control socket's wire protocol, version 1. docs/PROTOCOL.md is its reference.
///
/// One request per connection: the client writes one JSON object and a newline, the daemon
/// answers with one JSON object and a newline, then closes.
public enum ControlProtocol {
    public static let version = 1
    /// A request larger than this is refused unread: no legitimate request comes near it.
    public static let maxRequestBytes = 16 * 1024
    public static let defaultSocketPath = "/run/deskd/deskd.sock"
    public static let socketEnvironmentKey = "DESKD_SOCKET"
}
