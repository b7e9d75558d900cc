import DeskCore
import Foundation
import Testing

/// `deskctl status`'s lines for the gateway and the metrics endpoint: listening, or not and why.
@Suite struct StatusTextTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static func status(_ listeners: [SideListenerStatus]?) -> DaemonStatus {
        DaemonStatus(daemonVersion: "0.1.0", pid: 812, startedAt: now, uptimeSeconds: 65, socket: "/run/deskd/deskd.sock", configurationFile: nil,
                     sessions: 0, sessionsByState: [:], users: 0, maxSessionsPerUser: 4, maxSessions: nil, listeners: listeners)
    }

    @Test func listenersGetALineEachAndAProblemItsOwn() {
        let text = StatusText.render(Self.status([
            SideListenerStatus(name: "gateway", address: "0.0.0.0:8443", listening: false,
                               problem: "port 8443 is held by uid 1001 (mallory)", failedAttempts: 3, nextAttemptAt: Self.now.addingTimeInterval(3.2)),
            SideListenerStatus(name: "metrics", address: "127.0.0.1:9466", listening: true),
        ]), now: Self.now)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(Array(lines.suffix(3)) == [
            "gateway  NOT listening on 0.0.0.0:8443 (3 failed attempts; next try in 4s)",
            "         port 8443 is held by uid 1001 (mallory)",
            "metrics  listening on 127.0.0.1:9466",
        ])
    }

    @Test func aLongProblemIsWrappedWithin80Columns() {
        let problem = "the gateway could not listen on 0.0.0.0 port 8443: Address already in use; port 8443 is held by uid 1001 (mallory), so what connects there reaches that program, not deskd"
        let text = StatusText.render(Self.status([SideListenerStatus(name: "gateway", address: "0.0.0.0:8443", listening: false, problem: problem, failedAttempts: 1)]), now: Self.now)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(text)")
        let problemLines = lines.drop { !$0.hasPrefix("gateway") }.dropFirst()
        #expect(problemLines.count >= 2 && problemLines.allSatisfy { $0.hasPrefix("         ") })
        #expect(problemLines.map { $0.trimming() }.joined(separator: " ") == problem)
    }

    @Test func aListenerNotYetTriedIsStarting() {
        let text = StatusText.render(Self.status([SideListenerStatus(name: "metrics", address: "127.0.0.1:9466", listening: false)]), now: Self.now)
        #expect(text.hasSuffix("\nmetrics  starting on 127.0.0.1:9466"), "\(text)")
    }

    @Test func withoutListenersNothingIsAdded() {
        #expect(!StatusText.render(Self.status(nil)).contains("listening"))
    }

    @Test func theAddressOfAnIPv6HostIsBracketed() {
        #expect(SideListenerStatus.address(host: "::1", port: 8443) == "[::1]:8443")
        #expect(SideListenerStatus.address(host: "127.0.0.1", port: 9466) == "127.0.0.1:9466")
    }
}
