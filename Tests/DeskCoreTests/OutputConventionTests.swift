import DeskCore
import Foundation
import Testing

@Suite("Output conventions")
struct OutputConventionTests {
    static let session = Session(
        id: "x", user: "alice", uid: 1000, gid: 1000, display: Display(12), endpoint: .unixSocket(path: "/run/deskd/displays/12/rfb.sock"), pid: 4242, pidStartTicks: 1,
        executable: "/usr/bin/Xtigervnc", state: .unresponsive, startedAt: Date(timeIntervalSince1970: 0),
        desktop: "openbox", geometry: Geometry(width: 3840, height: 2160), depth: 24, idleSeconds: 90_000
    )

    @Test("the session table fits 80 columns even with its widest ordinary values")
    func tableFits() {
        let text = SessionTable.render([Self.session], now: Date(timeIntervalSince1970: 200_000))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(text)")
    }

    @Test("colour only on a terminal, never with NO_COLOR or TERM=dumb, and alignment survives it")
    func colour() {
        #expect(SessionTable.wantsColour(environment: ["TERM": "xterm"], isTerminal: true))
        #expect(!SessionTable.wantsColour(environment: ["TERM": "xterm", "NO_COLOR": "1"], isTerminal: true))
        #expect(!SessionTable.wantsColour(environment: ["TERM": "dumb"], isTerminal: true))
        #expect(!SessionTable.wantsColour(environment: [:], isTerminal: false))
        let plain = SessionTable.render([Self.session], now: Date(timeIntervalSince1970: 200_000))
        let coloured = SessionTable.render([Self.session], now: Date(timeIntervalSince1970: 200_000), colour: true)
        #expect(coloured.contains("\u{1B}[31munresponsive\u{1B}[0m"))
        #expect(coloured.replacingOccurrences(of: "\u{1B}[31m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "") == plain)
    }
}
