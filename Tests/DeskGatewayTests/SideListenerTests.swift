import DeskCore
import DeskGateway
import DeskLinux
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

/// A gateway whose port someone else holds: the service says why (and who holds it), keeps
/// trying, and listens once the port is free — never ending with an error that would stop deskd.
@Suite struct SideListenerTests {
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

    @Test func aHeldPortIsReportedWithItsHolderAndTakenOnceFree() async throws {
        let squatter = try Squatter()
        var released = false
        defer { if !released { squatter.leave() } }
        let gateway = Gateway(configuration: GatewayConfiguration(host: "127.0.0.1", port: squatter.port),
                              authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        let reports = Mutex<[SideListenerStatus]>([])
        let service = SideListenerService(gateway, backoff: .init(first: .milliseconds(20), longest: .milliseconds(80)), logger: quietLogger,
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

        // The squatter leaves: the next attempt listens, and a browser gets the gateway's page.
        squatter.leave()
        released = true
        #expect(await waitFor { service.current.listening })
        #expect(service.current.problem == nil && service.current.nextAttemptAt == nil)
        #expect(try await gateway.port() == squatter.port)
        let response = try RawClient(port: squatter.port).request("GET", "/nothing-here")
        #expect(response.status == 404)
        #expect(reports.withLock { $0.first?.listening == false && $0.last?.listening == true })

        running.cancel()
        try await running.value
    }

    /// The sentence says "Address already in use"; the cause keeps the call, the address and errno for the log.
    @Test func aRefusedBindKeepsItsErrnoAsTheCause() async throws {
        let squatter = try Squatter()
        defer { squatter.leave() }
        let gateway = Gateway(configuration: GatewayConfiguration(host: "127.0.0.1", port: squatter.port),
                              authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        do {
            let channel = try await gateway.listen()
            try? await channel.close()
            Issue.record("listened on a port another socket holds")
        } catch {
            #expect(error.code == .bindFailed && error.message.hasSuffix(": Address already in use"), "\(error)")
            #expect(error.cause == .system(operation: "bind", path: "127.0.0.1:\(squatter.port)", errno: EADDRINUSE,
                                           name: "EADDRINUSE", text: "Address already in use"))
        }
    }

    @Test func aMissingCertificateIsWaitedForNotFatal() async throws {
        let configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: "/nonexistent/cert.pem", tlsKeyPath: "/nonexistent/key.pem")
        let gateway = Gateway(configuration: configuration, authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        let service = SideListenerService(gateway, backoff: .init(first: .milliseconds(10), longest: .milliseconds(10)), logger: quietLogger)
        let running = Task { try await service.run() }
        #expect(await waitFor { service.current.failedAttempts >= 2 })
        #expect(service.current.problem?.contains("/nonexistent/cert.pem") == true)
        // Cancelled while waiting, it ends without an error, and whoever waits for the port hears why.
        running.cancel()
        try await running.value
        await #expect(throws: GatewayError.self) { try await gateway.port() }
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
