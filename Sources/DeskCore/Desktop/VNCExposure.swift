/// Where Xvnc accepts viewers, and what a viewer must do to get in.
public struct VNCExposure: Sendable, Equatable {
    public enum Listen: Sendable, Equatable {
        /// No TCP port at all: a Unix socket in the session directory, the owner's alone.
        /// Viewers come through OpenSSH's socket forwarding. The default.
        case unixSocket
        /// TCP on 127.0.0.1, port 5900+N: every local user can reach it and try the password.
        case loopback
        /// TCP on this IPv4 address ("0.0.0.0": every interface).
        case address(String)
    }

    public var listen = Listen.unixSocket
    /// Xvnc's -SecurityTypes. "None" is never accepted: a desktop without authentication is
    /// anyone's who reaches it.
    public var securityTypes = ["VncAuth"]
    public var tlsCertificate: String?
    public var tlsKey: String?

    public static let knownSecurityTypes = ["VncAuth", "TLSVnc", "X509Vnc"]

    public init() {}

    public var usesTCP: Bool { listen != .unixSocket }

    /// Display :N's RFB port is this plus N, when sessions listen on TCP.
    public var portBase = Display.defaultRFBPortBase

    /// Where the displays' RFB ports start, for the look at what holds them; nil without TCP.
    public var rfbPortBase: Int? { usesTCP ? portBase : nil }

    /// False only for TCP on an address beyond loopback.
    public var isLoopbackOnly: Bool {
        guard case .address(let address) = listen else { return true }
        return address == "127.0.0.1"
    }

    /// Where deskd itself reaches Xvnc over TCP for readiness checks and probes.
    public var reachableAddress: String {
        guard case .address(let address) = listen, address != "0.0.0.0" else { return "127.0.0.1" }
        return address
    }

    /// Whether deskd can log in with the session password (VncAuth, plain or inside TLSVnc);
    /// an X509Vnc-only server would need the viewer's trust in the certificate.
    public var allowsPasswordProbe: Bool { securityTypes.contains("VncAuth") }
}
