@testable import DeskDaemon
import DeskCore
import DeskFrontProtocol
import DeskLinux
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

/// The gateway's listening socket as deskd binds it for its web front, run by a
/// `SideListenerService`: a port someone else holds is reported with its holder and tried
/// again until it is free, a TLS file not there yet is waited for, and nothing of it ever ends
/// deskd with an error.
@Suite struct FrontListenerTests {
    /// A TCP listener on 127.0.0.1, as a squatter would hold a port.
    final class Squatter {
        let fd: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0, InternetSocketAddress.loopback(port: 0).withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 1) == 0,
                  let port = InternetSocketAddress.boundPort(of: fd) else { throw POSIXError(.EADDRINUSE) }
            self.fd = fd
            self.port = port
        }

        func leave() { close(fd) }
    }

    static let logger = Logger(label: "deskd-test") { _ in SwiftLogNoOpLogHandler() }

    /// deskd's gateway listener on `configuration`, handing its socket to a front server no
    /// front has connected to.
    static func gatewayListener(_ configuration: GatewayConfiguration, daemon: SessionServiceTests.Daemon) -> FrontListener {
        FrontListener(name: "gateway", host: configuration.host, requestedPort: configuration.port, gateway: configuration,
                      fronts: FrontServer(service: daemon.service, logger: logger), logger: logger)
    }

    @Test func aHeldPortIsReportedWithItsHolderAndTakenOnceFree() async throws {
        let daemon = try SessionServiceTests.Daemon()
        defer { daemon.remove() }
        let squatter = try Squatter()
        var released = false
        defer { if !released { squatter.leave() } }
        let listener = Self.gatewayListener(GatewayConfiguration(host: "127.0.0.1", port: squatter.port), daemon: daemon)
        let reports = Mutex<[SideListenerStatus]>([])
        let service = SideListenerService(listener, backoff: .init(first: .milliseconds(20), longest: .milliseconds(80)), logger: Self.logger,
                                          report: { status in reports.withLock { $0.append(status) } })
        let running = Task { try await service.run() }
        defer { running.cancel() }

        #expect(await waitFor { service.current.failedAttempts >= 3 })
        let waiting = service.current
        #expect(!waiting.listening && waiting.name == "gateway" && waiting.address == "127.0.0.1:\(squatter.port)")
        let problem = try #require(waiting.problem)
        let me = UserAccount.withUID(getuid())?.name ?? ""
        #expect(problem.contains("port \(squatter.port) is held by uid \(getuid()) (\(me))"), "\(problem)")
        #expect(problem.contains("could not listen on 127.0.0.1 port \(squatter.port)"), "\(problem)")
        #expect(waiting.nextAttemptAt != nil)

        // The squatter leaves: the next attempt listens, and a browser's connection is taken.
        squatter.leave()
        released = true
        #expect(await waitFor { service.current.listening })
        #expect(service.current.problem == nil && service.current.nextAttemptAt == nil)
        let browser = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(browser) }
        #expect(InternetSocketAddress.loopback(port: squatter.port).withSockaddr({ connect(browser, $0, $1) }) == 0)
        #expect(reports.withLock { $0.first?.listening == false && $0.last?.listening == true })

        running.cancel()
        try await running.value
    }

    /// The sentence says "Address already in use"; the cause keeps the call, the address and errno for the log.
    @Test func aRefusedBindKeepsItsErrnoAsTheCause() async throws {
        let daemon = try SessionServiceTests.Daemon()
        defer { daemon.remove() }
        let squatter = try Squatter()
        defer { squatter.leave() }
        let listener = Self.gatewayListener(GatewayConfiguration(host: "127.0.0.1", port: squatter.port), daemon: daemon)
        do {
            let bound = try await listener.listen()
            close(bound.fd)
            Issue.record("listened on a port another socket holds")
        } catch {
            #expect(error.code == .bindFailed && error.message.hasSuffix(": Address already in use"), "\(error)")
            #expect(error.cause == .system(operation: "bind", path: "127.0.0.1:\(squatter.port)", errno: EADDRINUSE,
                                           name: "EADDRINUSE", text: "Address already in use"))
        }
    }

    @Test func aMissingCertificateIsWaitedForNotFatal() async throws {
        let daemon = try SessionServiceTests.Daemon()
        defer { daemon.remove() }
        let configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: "/nonexistent/cert.pem", tlsKeyPath: "/nonexistent/key.pem")
        let listener = Self.gatewayListener(configuration, daemon: daemon)
        await #expect {
            _ = try await listener.listen()
        } throws: { error in
            guard let error = error as? GatewayError else { return false }
            return error.code == .tlsUnreadable && error.description.contains("/nonexistent/cert.pem")
        }
        let service = SideListenerService(listener, backoff: .init(first: .milliseconds(10), longest: .milliseconds(10)), logger: Self.logger)
        let running = Task { try await service.run() }
        #expect(await waitFor { service.current.failedAttempts >= 2 })
        #expect(service.current.problem?.contains("/nonexistent/cert.pem") == true)
        // Cancelled while waiting, it ends without an error.
        running.cancel()
        try await running.value
    }

    /// Plain HTTP off loopback is refused before anything is bound.
    @Test func plainHTTPOffLoopbackBindsNothing() async throws {
        let daemon = try SessionServiceTests.Daemon()
        defer { daemon.remove() }
        let listener = Self.gatewayListener(GatewayConfiguration(host: "0.0.0.0", port: 0), daemon: daemon)
        await #expect { _ = try await listener.listen() } throws: { ($0 as? GatewayError)?.code == .plainHTTPOffLoopback }
    }

    @Test(arguments: [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (40, 60)])
    func backoffDoublesUpToItsLongest(failures: Int, seconds: Int) {
        #expect(SideListenerService.Backoff().delay(after: failures) == .seconds(seconds))
    }

    private func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
