import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// A second local user who binds the gateway's and the metrics' ports before deskd starts
/// changes nothing for desktops: deskd comes up, serves its control socket, starts desktops,
/// says in `deskctl status`, the metrics and one log line per listener which port is held and
/// by whom, and listens there as soon as the user lets go.
extension EndToEnd {
@Suite struct PortSquatterTests {
    /// A process of `user` holding TCP `ports` on every address until `release()`.
    final class Squatter {
        let process = Process()
        private let input = Pipe()

        init(user: String, ports: [Int]) throws {
            let script = """
                import socket, sys
                held = []
                for port in sys.argv[1:]:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.bind(("0.0.0.0", int(port)))
                    s.listen()
                    held.append(s)
                print("holding", flush=True)
                sys.stdin.read()
                """
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--", "/usr/bin/python3", "-c", script] + ports.map(String.init)
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            guard line.hasPrefix("holding") else { release(); throw POSIXError(.EADDRINUSE) }
        }

        func release() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test func portsHeldByAnotherUserChangeNothingForDesktops() throws {
        let mallory = try TestUsers.ensure("deskt-mallory")
        let quinn = try TestUsers.ensure("deskt-quinn")
        let gatewayPort = try #require(InternetSocketAddress.freeLoopbackPort())
        let metricsPort = try #require(InternetSocketAddress.freeLoopbackPort())
        let squatter = try Squatter(user: mallory.name, ports: [gatewayPort, metricsPort])
        var released = false
        defer { if !released { squatter.release() } }

        let daemon = try DaemonUnderTest(config: """
            [web]
            listen = "127.0.0.1:\(gatewayPort)"
            [metrics]
            listen = "127.0.0.1:\(metricsPort)"
            """)
        defer { daemon.shutDown(); TestUsers.reap(quinn); TestUsers.reap(mallory) }
        // deskd serves: a desktop starts, and keeps running through all of this.
        let session = try daemon.start(quinn.name)
        #expect(ProcFS.isAlive(session.pid))

        #expect(eventually(10) { ((try? daemon.deskctl(["status", "--json"]).decode(DaemonStatus.self))?.listeners ?? []).allSatisfy { $0.failedAttempts >= 2 } })
        let status = try daemon.deskctl(["status", "--json"]).decode(DaemonStatus.self)
        let listeners = try #require(status.listeners)
        #expect(listeners.map(\.name) == ["gateway", "metrics"])
        for (listener, port) in zip(listeners, [gatewayPort, metricsPort]) {
            #expect(!listener.listening && listener.address == "127.0.0.1:\(port)")
            #expect(listener.problem?.contains("port \(port) is held by uid \(mallory.uid) (\(mallory.name))") == true, "\(listener)")
        }
        let text = try daemon.deskctl(["status"])
        #expect(text.stdout.contains("gateway  NOT listening on 127.0.0.1:\(gatewayPort)"), "\(text.stdout)")
        let metrics = try daemon.deskctl(["metrics"]).stdout
        #expect(metrics.contains("deskd_listener_up{listener=\"gateway\"} 0.0") || metrics.contains("deskd_listener_up{listener=\"gateway\"} 0\n"), "\(metrics)")
        #expect(metrics.contains("deskd_listener_bind_failures_total{listener=\"metrics\"}"), "\(metrics)")
        // One line per listener, not one per attempt.
        #expect(daemon.logText.components(separatedBy: "gateway not listening").count == 2, "\(daemon.logText)")

        // The user lets go: deskd listens on both, and the session never noticed.
        squatter.release()
        released = true
        #expect(eventually(20) { ((try? daemon.deskctl(["status", "--json"]).decode(DaemonStatus.self))?.listeners ?? []).allSatisfy(\.listening) })
        let scrape = try CommandResult.run("/usr/bin/python3", ["-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:\(metricsPort)/metrics').read().decode())"])
        #expect(scrape.stdout.contains("deskd_listener_up{listener=\"gateway\"} 1"), "\(scrape.stdout)\(scrape.stderr)")
        #expect(ProcFS.isAlive(session.pid) && daemon.isRunning)
        #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
    }
}
}
