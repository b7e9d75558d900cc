import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// Displays past :99: on their Unix socket a display number is only a name; on TCP the port
/// comes from network.port_base. Real Xtigervnc on :1500 and up, probed with the password.
extension EndToEnd {
@Suite struct DisplayRangeTests {
    @Test func sessionsPast99StartAnswerAndLeaveNothingWhenKilled() throws {
        let owner = try TestUsers.ensure("deskt-rhea")
        let daemon = try DaemonUnderTest(config: "[limits]\ndisplays = \"1500-1509\"\nmax_sessions_per_user = 10\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let first = try daemon.start(owner.name)
        let second = try daemon.start(owner.name)
        #expect(first.display.number >= 1500 && second.display.number >= 1500 && first.display != second.display, "\(first.display) \(second.display)")
        for session in [first, second] {
            let probe = try daemon.deskctl(["probe", session.display.description])
            #expect(probe.status == 0 && probe.stdout.contains("answered"), "\(probe.stdout)\(probe.stderr)")
        }
        // The ssh hint's local port stays clear of 6000-6063 on the viewer's machine.
        let shown = try daemon.deskctl(["show", first.display.description, "--json"]).stdout
        #expect(shown.contains("ssh -L \(20000 + first.display.number):"), "\(shown)")

        let kill = try daemon.deskctl(["kill", "--all"])
        #expect(kill.status == 0, "\(kill.stderr)")
        #expect(eventually(10) { TestUsers.processes(of: owner).isEmpty }, "left running: \(TestUsers.processes(of: owner))")
        #expect(access(first.display.lockPath, F_OK) != 0 && access(second.display.lockPath, F_OK) != 0, "a lock file outlived its session")
    }

    @Test func onTCPADisplayPast99ListensOnThePortBasePlusItsNumber() throws {
        let owner = try TestUsers.ensure("deskt-rhea")
        let daemon = try DaemonUnderTest(config: "[network]\nlisten = \"loopback\"\nport_base = 10000\n[limits]\ndisplays = \"1510-1519\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)
        #expect(session.rfbPort == 10000 + session.display.number && session.rfbSocket == nil, "\(session)")
        let probe = try daemon.deskctl(["probe", session.display.description])
        #expect(probe.status == 0, "\(probe.stdout)\(probe.stderr)")
        #expect(RFBHandshake.attempt(port: 10000 + session.display.number, timeoutMilliseconds: 500) != .refused)
        _ = try daemon.deskctl(["kill", session.display.description])
        #expect(eventually(10) { TestUsers.processes(of: owner).isEmpty })
    }

    @Test func aHostWithoutTheMemoryReserveRefusesAStartWithItsNumbers() throws {
        let owner = try TestUsers.ensure("deskt-rhea")
        // A reserve no test machine has: the real MemAvailable is always short of it.
        let daemon = try DaemonUnderTest(config: "[limits]\nmemory_reserve = \"64T\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let refused = try daemon.deskctl(["start", "--user", owner.name])
        #expect(refused.status == 1 && refused.stderr.contains("under limits.memory_reserve 64 TiB"), "\(refused.stderr)")
        let status = try daemon.deskctl(["status"]).stdout
        #expect(status.contains("reserve 64 TiB, room for 0 more desktops"), "\(status)")
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)
    }
}
}
