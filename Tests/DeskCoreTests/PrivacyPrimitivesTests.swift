import DeskCore
import Foundation
import Testing

/// The pure pieces of private sessions: the X cookie file, VNC's challenge response, the
/// escaping of text for terminals, and the audit trail's caps.
@Suite struct XAuthorityTests {
    @Test func theFileIsLibXausFormatWithAWildcardAddress() {
        let cookie = XAuthority(cookie: Array(0..<16))
        let bytes = cookie.fileContents(for: Display(42))
        // family 0xFFFF, empty address, "42", "MIT-MAGIC-COOKIE-1", 16 bytes: each length-prefixed big-endian.
        let expected: [UInt8] = [0xFF, 0xFF, 0, 0, 0, 2] + Array("42".utf8) + [0, 18] + Array("MIT-MAGIC-COOKIE-1".utf8) + [0, 16] + Array(0..<16)
        #expect(bytes == expected)
        #expect(cookie.hex == "000102030405060708090a0b0c0d0e0f")
    }

    @Test func cookiesAreFreshAndFull() {
        let cookies = (0..<64).map { _ in XAuthority.generate().cookie }
        #expect(Set(cookies).count == 64)
        #expect(cookies.allSatisfy { $0.count == 16 })
    }
}

@Suite struct VNCAuthenticationTests {
    /// Checked against libvncclient's rfbClientEncryptBytes (what every VNC viewer sends).
    @Test(arguments: [
        ("secret12", "cd832257b3584199bd999a523f52c582"),
        ("ab", "f734776b117668c42ff2a33d36442b0e"),
        ("secret12-and-more", "cd832257b3584199bd999a523f52c582"),
    ])
    func theResponseMatchesLibvncclient(password: String, expected: String) {
        let challenge = (0..<16).map { UInt8(truncatingIfNeeded: $0 * 17 + 3) }
        let response = VNCAuthentication.response(challenge: challenge, password: password)
        #expect(response.map { String(format: "%02x", $0) }.joined() == expected)
    }
}

@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("alice", "alice"),
        ("\u{1B}]0;pwned\u{07}", "\\x1b]0;pwned\\x07"),
        ("a\u{9B}31mred", "a\\x9b31mred"),
        ("evil\u{202E}txt.exe", "evil\\u{202e}txt.exe"),
        ("tab\tkept", "tab\tkept"),
        ("two\nlines", "two\\x0alines"),
        ("nul\u{0}", "nul\\x00"),
        ("del\u{7F}", "del\\x7f"),
        ("héllo wörld ✓", "héllo wörld ✓"),
    ])
    func controlsBecomeVisible(input: String, expected: String) {
        #expect(TerminalText.escape(input) == expected)
    }

    @Test func newlinesMayStay() {
        #expect(TerminalText.escape("a\nb\u{1B}", keepNewlines: true) == "a\nb\\x1b")
    }

    @Test func jsonKeepsItsValuesButNotTheTerminalControls() throws {
        let name = "x\u{9B}31m\u{7F}\u{202E}é"
        let json = String(decoding: try JSONEncoder().encode([name]), as: UTF8.self)
        let escaped = TerminalText.escapeJSON(json)
        #expect(!escaped.unicodeScalars.contains { [0x9B, 0x7F, 0x202E].contains($0.value) })
        #expect(escaped.contains("\\u009b") && escaped.contains("é"))
        #expect(try JSONDecoder().decode([String].self, from: Data(escaped.utf8)) == [name])
    }
}

@Suite struct AuditCapsTests {
    static func entry(uid: UInt32 = 1001, ok: Bool = false, user: String? = "bob") -> AuditEntry {
        AuditEntry(time: Date(timeIntervalSince1970: 0), peerUID: uid, peerPID: 1, peerUser: "bob", command: .kill,
                   user: user, ok: ok, outcome: ok ? "killed :1 (bob)" : "permission-denied")
    }

    @Test func everyFieldIsCapped() {
        var entry = Self.entry(user: String(repeating: "x", count: 16_000))
        entry.detail = String(repeating: "d", count: 10_000)
        entry.outcome = String(repeating: "o", count: 10_000)
        let capped = entry.capped()
        #expect(capped.user!.utf8.count <= AuditEntry.nameLimit)
        #expect(capped.detail!.utf8.count <= AuditEntry.textLimit)
        #expect(capped.outcome.utf8.count <= AuditEntry.textLimit)
        #expect(capped.user!.hasSuffix("..."))
        #expect(Self.entry().capped() == Self.entry())
    }

    @Test func refusalsBeyondTheRateAreCountedNotWritten() {
        var limiter = AuditLimiter(perMinute: 10)
        var written = 0
        for _ in 0..<1000 where limiter.admit(Self.entry(), changedSessions: false, now: 100) != nil { written += 1 }
        #expect(written == 10)
        // Another caller is not held up by the first one's flood, and real kills always go through.
        #expect(limiter.admit(Self.entry(uid: 1002), changedSessions: false, now: 100) != nil)
        let kill = limiter.admit(Self.entry(ok: true), changedSessions: true, now: 100)
        #expect(kill?.suppressed == 990)
        // The count is carried once; a minute later the bucket is full again.
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 100)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 160) != nil)
    }

    @Test func successesThatChangedNothingAreLimitedLikeRefusals() {
        // `kill --all` with nothing to kill, `reap --dry-run` and `passwd` succeed without starting
        // or ending a session; a loop of them must not flush the trail either.
        var limiter = AuditLimiter(perMinute: 5)
        var written = 0
        for _ in 0..<500 where limiter.admit(Self.entry(ok: true), changedSessions: false, now: 0) != nil { written += 1 }
        #expect(written == 5)
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 0)?.suppressed == 495)
        // A refused request that claims a change is still a refusal.
        for _ in 0..<10 { _ = limiter.admit(Self.entry(ok: false), changedSessions: true, now: 0) }
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 0)?.suppressed == 10)
    }

    @Test func theSuppressedCountRidesOnTheNextRecordedRefusal() {
        var limiter = AuditLimiter(perMinute: 1)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 0)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 1) == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 2) == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 61)?.suppressed == 2)
    }
}

@Suite struct EndpointTests {
    static func session(_ endpoint: RFBEndpoint) -> Session {
        Session(id: "0123456789abcdef0123456789abcdef", user: "alice", uid: 1001, gid: 1001, display: Display(3), endpoint: endpoint,
                pid: 10, pidStartTicks: 1, executable: "/usr/bin/Xtigervnc", state: .ready, startedAt: Date(), desktop: "xterm",
                geometry: Geometry(width: 800, height: 600), depth: 24)
    }

    @Test func aSocketSessionHasNoPortAndTunnelsToItsSocket() throws {
        let session = Self.session(.unixSocket(path: "/run/deskd/displays/3/rfb.sock"))
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(session)) as? [String: Any]
        #expect(object?["rfbSocket"] as? String == "/run/deskd/displays/3/rfb.sock")
        #expect(object?["rfbPort"] == nil)
        let hints = session.connectHints(host: "vm")
        #expect(hints.sshTunnel == "ssh -L 5903:/run/deskd/displays/3/rfb.sock alice@vm")
        #expect(hints.viewer == "vncviewer localhost:5903")
    }

    @Test func aTCPSessionHasAPortAndNoSocket() throws {
        let session = Self.session(.tcp(port: 5903))
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(session)) as? [String: Any]
        #expect(object?["rfbPort"] as? Int == 5903)
        #expect(object?["rfbSocket"] == nil)
        #expect(session.connectHints(host: "vm").sshTunnel == "ssh -L 5903:localhost:5903 alice@vm")
    }

    @Test func aPlantedLockMakesItsDisplayUnusable() {
        let occupancy = DisplayOccupancy.unusableLock("/tmp/.X3-lock is a FIFO")
        #expect(!occupancy.isUsable)
        #expect(occupancy.reason == "its lock file /tmp/.X3-lock is a FIFO")
    }
}
