import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Testing

/// Viewer tracking, reaping and probing against real Xtigervnc with real libvncclient viewers.
extension EndToEnd {
@Suite struct IdleAndHealthTests {
    @Test func aWatchedSessionSurvivesReapWhileAnUnwatchedOneIsReaped() throws {
        let judy = try TestUsers.ensure("deskt-judy")
        let kim = try TestUsers.ensure("deskt-kim")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(judy); TestUsers.reap(kim) }
        let watched = try daemon.start(judy.name)
        let unwatched = try daemon.start(kim.name)

        let viewer = try VNCConnection(watched.endpoint, password: watched.password)
        defer { viewer.close() }
        #expect(eventually { (try? daemon.sessions().first { $0.display == watched.display }?.clients) == 1 })
        #expect(try daemon.sessions().first { $0.display == unwatched.display }?.clients == 0)
        // Nobody ever connected to the unwatched one: it is idle since its start.
        #expect(eventually(5) { (try? daemon.sessions().first { $0.display == unwatched.display }?.idleSeconds ?? 0) ?? 0 >= 2 })

        // --dry-run names it and kills nothing.
        let dry = try daemon.deskctl(["reap", "--idle", "2s", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(try dry.decode([Session].self).map(\.display) == [unwatched.display])
        #expect(try daemon.deskctl(["reap", "--idle", "2s", "--dry-run"]).stdout.contains("Would kill \(unwatched.display)"))
        #expect(ProcFS.isAlive(unwatched.pid))
        #expect(try daemon.sessions().count == 2)

        // The real pass kills only the unwatched one.
        let reap = try daemon.deskctl(["reap", "--idle", "2s"])
        #expect(reap.status == 0, "\(reap.stderr)")
        #expect(reap.stdout.contains("Killed \(unwatched.display) (\(kim.name))"))
        #expect(TestUsers.processes(of: kim).isEmpty)
        #expect(ProcFS.isAlive(watched.pid))
        #expect(viewer.refresh() != nil, "the viewer is still served")

        // When the viewer leaves, deskd notes when.
        viewer.close()
        #expect(eventually { (try? daemon.sessions().first?.lastClientAt) != nil })
        let after = try #require(try daemon.sessions().first)
        #expect(after.clients == 0)

        // Users reap only their own; a long idle limit reaps nothing.
        let none = try daemon.deskctl(["reap", "--idle", "1d"])
        #expect(none.status == 0 && none.stdout.contains("No session"))
        #expect(try daemon.deskctl(["reap", "--idle", "1s", "--user", judy.name], as: kim.name).status != 0)
        #expect(try daemon.deskctl(["reap", "--idle", "1s"], as: kim.name).stdout.contains("No session"))
        #expect(ProcFS.isAlive(watched.pid))
    }

    @Test func probeReportsTheHandshakeAndCallsAStoppedXvncUnresponsive() throws {
        let leo = try TestUsers.ensure("deskt-leo")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(leo) }
        let session = try daemon.start(leo.name, extra: ["--geometry", "1024x768"])
        defer { kill(session.pid, SIGCONT) }

        let probe = try daemon.deskctl(["probe", session.display.description, "--json"])
        #expect(probe.status == 0, "\(probe.stderr)")
        let report = try probe.decode(ProbeReport.self)
        #expect(report.answered && report.protocolVersion == "3.8")
        #expect(report.width == 1024 && report.height == 768)
        #expect(report.desktopName?.contains(leo.name) == true)
        #expect((report.roundTripMilliseconds ?? -1) >= 0)

        // Stopped, Xvnc still accepts TCP (the kernel does) but never answers.
        kill(session.pid, SIGSTOP)
        let stuck = try daemon.deskctl(["probe", session.display.description, "--timeout", "2"])
        #expect(stuck.status == 1)
        #expect(stuck.stderr.contains("unresponsive"))
        #expect(try daemon.sessions().first?.state == .unresponsive)

        kill(session.pid, SIGCONT)
        #expect(try daemon.deskctl(["probe", session.display.description]).status == 0)
        #expect(eventually { (try? daemon.sessions().first?.state) == .ready })
    }
}
}

extension DaemonUnderTest {
    /// `deskctl list --all --json` as root.
    func sessions() throws -> [Session] {
        try deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
    }
}
