import DeskCore
import Testing

/// Xvnc's command line, the one every desktop's server is started with (deskd's local sessions
/// and a cluster node's job): the hardening flags always, what the exposure and policy add, and
/// a policy that travels to a job and back as Xvnc's options and nothing else.
@Suite struct XvncTests {
    static func needs(_ exposure: VNCExposure = VNCExposure(), tls: DisplayServerNeeds.TLSFiles? = nil,
                      policy: DisplayServerPolicy = DisplayServerPolicy()) -> DisplayServerNeeds {
        DisplayServerNeeds(display: Display(3), xauthority: "/run/deskd/displays/3/Xauthority", passwordFile: "/run/deskd/displays/3/passwd",
                           rfbSocket: "/run/deskd/displays/3/rfb.sock", geometry: Geometry(width: 1280, height: 800), depth: 24,
                           title: "alice's desktop (:3)", exposure: exposure, tlsFiles: tls, policy: policy)
    }

    static let xvnc = Xvnc(executable: "/usr/bin/Xtigervnc")

    @Test func theDefaultIsTheOwnersSocketOnlyWithTheSessionsCookieAndPassword() {
        #expect(Self.xvnc.commandLine(Self.needs()) == [
            "/usr/bin/Xtigervnc", ":3", "-auth", "/run/deskd/displays/3/Xauthority", "-nolisten", "tcp",
            "-rfbauth", "/run/deskd/displays/3/passwd", "-geometry", "1280x800", "-depth", "24", "-desktop", "alice's desktop (:3)",
            "-AlwaysShared", "-rfbport", "-1", "-rfbunixpath", "/run/deskd/displays/3/rfb.sock", "-rfbunixmode", "0600",
            "-SecurityTypes", "VncAuth",
        ])
    }

    @Test func tcpExposureAndTLSAreAddedAfterTheHardeningFlags() {
        var loopback = VNCExposure()
        loopback.listen = .loopback
        #expect(Self.xvnc.commandLine(Self.needs(loopback)).suffix(5) == ["-rfbport", "5903", "-localhost", "-SecurityTypes", "VncAuth"])
        var everywhere = VNCExposure()
        everywhere.listen = .address("0.0.0.0")
        everywhere.securityTypes = ["X509Vnc"]
        let line = Self.xvnc.commandLine(Self.needs(everywhere, tls: .init(certificate: "/c.pem", key: "/k.pem")))
        #expect(line.suffix(9) == ["-rfbport", "5903", "-interface", "0.0.0.0", "-SecurityTypes", "X509Vnc", "-X509Cert", "/c.pem", "-X509Key", "/k.pem"].suffix(9))
        for flag in ["-auth", "-nolisten", "-rfbauth", "-AlwaysShared"] { #expect(line.contains(flag)) }
    }

    @Test func thePolicyTravelsToAJobAndBackAsXvncsOptions() {
        let policies = [
            DisplayServerPolicy(),
            DisplayServerPolicy(maxIdleSeconds: 3600),
            DisplayServerPolicy(maxIdleSeconds: 60, maxDisconnectionSeconds: 600, sendsCutText: false),
            DisplayServerPolicy(sendsCutText: false),
        ]
        for policy in policies {
            let options = Xvnc.policyArguments(policy)
            #expect(Xvnc.policy(from: options) == policy, "\(options)")
            #expect(Self.xvnc.commandLine(Self.needs(policy: policy)).suffix(options.count) == options[...])
        }
        #expect(Xvnc.policyArguments(DisplayServerPolicy(maxIdleSeconds: 60, sendsCutText: false)) == ["-MaxIdleTime", "60", "-SendCutText=0"])
    }

    /// A job passes nothing else to Xvnc: an option after the hardening flags could undo one.
    @Test(arguments: [["-SecurityTypes", "None"], ["-rfbport", "5901"], ["-MaxIdleTime"], ["-MaxIdleTime", "-1"], ["-localhost=0"], ["-SendCutText=1"]])
    func anythingButThePolicyIsRefused(options: [String]) {
        #expect(Xvnc.policy(from: options) == nil)
    }

    @Test func aTakenDisplayIsReadFromTheLog() {
        #expect(Self.xvnc.displayWasTaken(log: ["Fatal server error:", "(EE) Server is already active for display 3"]))
        #expect(Self.xvnc.displayWasTaken(log: ["_XSERVTransSocketUNIXCreateListener: ...SocketCreateListener() failed", "Cannot establish any listening sockets - Make sure an X server isn't already running"]))
        #expect(!Self.xvnc.displayWasTaken(log: ["(EE) Couldn't add screen"]))
        #expect(Self.xvnc.clientEnvironment(Self.needs()) == ["DISPLAY": ":3", "XAUTHORITY": "/run/deskd/displays/3/Xauthority"])
        #expect(Self.xvnc.sessionType == "x11")
    }
}
