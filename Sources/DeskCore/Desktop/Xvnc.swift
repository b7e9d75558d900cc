/// TigerVNC's Xvnc (Debian's Xtigervnc): an X server that is its own VNC server. The one place
/// its command line is written, for deskd's local sessions and a cluster node's job alike, so a
/// hardening flag is added once.
public struct Xvnc: DisplayServer {
    public var executable: String

    public init(executable: String) {
        self.executable = executable
    }

    public static let kind = DisplayServerKind.xvnc
    public static let viewerAccess = ViewerAccess.password
    public static let viewerProgram = "Xvnc"
    public static let runsUsersXstartup = true
    public static let ownsXDisplay = true
    /// Xvnc keeps a view-only viewer's input itself, and its encodings are ones browsers read.
    public static let relayReadsServerMessages = false

    /// X display N: its socket, and only connections Xvnc itself accepted there.
    public static func clientSocket(display: Display, uid: UInt32, directory: String) -> DisplayClientSocket { .x11(display) }

    public var name: String { "Xtigervnc" }
    public var sessionType: String { "x11" }

    public func checkInstalled(isExecutable: (String) -> Bool) throws(DeskError) {
        guard !isExecutable(executable) else { return }
        throw DeskError(.xvncMissing, "Xtigervnc is not installed at \(executable); install it with: apt-get install tigervnc-standalone-server.")
    }

    public func desktopCommand(xstartup: String) -> [String] { ["/bin/sh", xstartup] }

    public func commandLine(_ needs: DisplayServerNeeds) -> [String] {
        [
            executable,
            needs.display.description,
            // X clients must show the session's cookie: without -auth, every local user could
            // open the display, read the screen and type into it.
            "-auth", needs.xauthority,
            "-nolisten", "tcp",
        ]
        // An abstract socket has no permissions: anyone on the host could connect, and fill the
        // server's client table before authenticating. The socket file is in the session's own
        // directory (deskd-session's PrivateXSockets).
        + (needs.privateXSockets ? ["-nolisten", "local"] : [])
        + [
            "-rfbauth", needs.passwordFile,
            "-geometry", needs.geometry.description,
            "-depth", String(needs.depth),
            "-desktop", needs.title,
            "-AlwaysShared",
        ]
        + listening(needs)
        + ["-SecurityTypes", needs.exposure.securityTypes.joined(separator: ",")]
        + (needs.tlsFiles.map { ["-X509Cert", $0.certificate, "-X509Key", $0.key] } ?? [])
        + Self.policyArguments(needs.policy)
    }

    private func listening(_ needs: DisplayServerNeeds) -> [String] {
        switch needs.exposure.listen {
        // -1, not 0: Xtigervnc 1.12 reads 0 as "5900 + display" and listens there on every
        // interface (checked on Debian 12). The socket is then the only RFB endpoint.
        case .unixSocket: ["-rfbport", "-1", "-rfbunixpath", needs.rfbSocket, "-rfbunixmode", "0600"]
        case .loopback: ["-rfbport", String(needs.rfbPort), "-localhost"]
        case .address(let address): ["-rfbport", String(needs.rfbPort), "-interface", address]
        }
    }

    /// The policy as Xvnc's options. deskd passes these to a cluster desktop's job in its spec
    /// (`JobSpec.xvncOptions`), which reads them back with `policy(from:)`: nothing else passes.
    public static func policyArguments(_ policy: DisplayServerPolicy) -> [String] {
        (policy.maxIdleSeconds.map { ["-MaxIdleTime", String($0)] } ?? [])
            + (policy.sendsCutText ? [] : ["-SendCutText=0"])
            + (policy.maxDisconnectionSeconds.map { ["-MaxDisconnectionTime", String($0)] } ?? [])
    }

    /// `policyArguments` read back; nil for anything else, which a job refuses rather than pass
    /// to Xvnc after its hardening flags (where it could undo one).
    public static func policy(from arguments: [String]) -> DisplayServerPolicy? {
        var policy = DisplayServerPolicy()
        var rest = arguments[...]
        while let option = rest.popFirst() {
            switch option {
            case "-SendCutText=0": policy.sendsCutText = false
            case "-MaxIdleTime", "-MaxDisconnectionTime":
                guard let value = rest.popFirst(), let seconds = Int(value), seconds > 0 else { return nil }
                if option == "-MaxIdleTime" { policy.maxIdleSeconds = seconds } else { policy.maxDisconnectionSeconds = seconds }
            default: return nil
            }
        }
        return policy
    }

    public func clientEnvironment(_ needs: DisplayServerNeeds) -> [String: String] {
        ["DISPLAY": needs.display.description, "XAUTHORITY": needs.xauthority]
    }

    /// What Xvnc says when the display was taken between the look and its own lock.
    public static let displayTakenPhrases = ["already active", "Address already in use", "Cannot establish any listening sockets"]

    public func displayWasTaken(log: [String]) -> Bool {
        log.contains { line in Self.displayTakenPhrases.contains { line.contains($0) } }
    }
}
