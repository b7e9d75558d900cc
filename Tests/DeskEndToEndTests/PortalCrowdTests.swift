import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// Issue 41: the portal holds against its own users. A second local user, from loopback
/// addresses it chooses (Tests/web/portal_crowd.py, each role a process of its own account),
/// tries each way one account shut the portal for others or erased root's trail, against a live
/// deskd and its web front; a victim only wants to log in.
extension EndToEnd {
@Suite(.serialized, .enabled(if: TestEnvironment.canRun && UserAccount.named("deskd-web") != nil && access("/etc/pam.d/deskd-web", R_OK) == 0,
                             "the crowd tests need root, Xtigervnc, the deskd-web account and /etc/pam.d/deskd-web (scripts/install-deps)"))
struct PortalCrowdTests {
    static let crowd = TestEnvironment.repository.appendingPathComponent("Tests/web/portal_crowd.py").path

    struct Cast {
        let attacker: UserAccount, attackerPassword: String
        let victim: UserAccount, victimPassword: String
    }

    static func cast(attacker: String = "deskt-mal", victim: String = "deskt-vic") throws -> Cast {
        let bad = try TestUsers.ensure(attacker), good = try TestUsers.ensure(victim)
        return Cast(attacker: bad, attackerPassword: try PortalTests.givePassword(to: bad), victim: good, victimPassword: try PortalTests.givePassword(to: good))
    }

    /// The scenario's JSON, run as root (the script drops to each role's account itself).
    static func play(_ scenario: String, _ base: String, _ cast: Cast, helper: UserAccount? = nil) throws -> [String: Any] {
        let run = try CommandResult.run("/usr/bin/python3", [
            crowd, scenario, base, "\(cast.attacker.uid)", cast.attackerPassword, "\(cast.victim.uid)", cast.victim.name, cast.victimPassword,
        ] + (helper.map { ["\($0.uid)"] } ?? []))
        print("PortalCrowdTests: \(scenario) → \(run.stdout)\(run.stderr)")
        return try PortalTests.json(run.stdout)
    }

    /// Finding 1: 256 event streams, 32 from each of eight loopback addresses, once answered every
    /// page, link and login 503. Now the account is one client (32 connections), with 8 streams.
    @Test func oneAccountsEventStreamsLeaveRoomForEveryoneElse() throws {
        let cast = try Self.cast()
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown() }
        let result = try Self.play("streams", base, cast)
        let attacker = try #require(result["attacker"] as? [String: Any]), victim = try #require(result["victim"] as? [String: Any])
        #expect(attacker["loginStatus"] as? Int == 200, "\(attacker)")
        #expect((attacker["streams"] as? Int ?? 99) <= 8, "one account held \(attacker["streams"] ?? "?") streams")
        #expect((attacker["streams"] as? Int ?? 0) >= 1, "the account's own page had no live updates")
        #expect(victim["page"] as? Int == 200 && victim["open"] as? Int == 200 && victim["login"] as? Int == 200, "\(victim)")
        let metrics = try daemon.deskctl(["metrics"]).stdout
        #expect(metrics.contains("reason=\"stream-capacity\""), "the streams over the account's share were not counted")
    }

    /// Finding 2: 10,200 logins as "!" from fresh addresses pushed the victim's running penalty
    /// out of the throttle's table; the right password then got in. Now the penalty stays (for
    /// everyone but the account's own connection, which issue 48 exempts: root tries it here).
    @Test func aFloodOfKeysCannotMakeTheThrottleForgetARunningPenalty() throws {
        let cast = try Self.cast(), helper = try TestUsers.ensure("deskt-hlp")
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown() }
        let result = try Self.play("throttle", base, cast, helper: helper)
        let before = try #require(result["rightBeforeFlood"] as? [String: Any]), after = try #require(result["rightAfterFlood"] as? [String: Any])
        let running = (before["message"] as? String).flatMap(Self.secondsToWait)
        #expect(running != nil, "eleven wrong passwords did not throttle the account: \(before)")
        let flood = result["flood"] as? [String: Any], floodSeconds = flood?["seconds"] as? Double ?? 0
        #expect(floodSeconds < Double(running ?? 0), "the flood took \(floodSeconds) s, longer than the \(running ?? 0) s left of the penalty, so it says nothing here")
        #expect((after["message"] as? String)?.contains("Too many failed logins") == true, "the flood made the throttle forget the account: \(after)")
        #expect(after["status"] as? Int == 403)
        print("PortalCrowdTests: the flood → \(result["flood"] ?? "")")
    }

    /// The N of "wait N s" in a throttled login's sentence.
    static func secondsToWait(_ sentence: String) -> Int? {
        let words = sentence.split(separator: " ")
        guard let at = words.firstIndex(of: "wait"), at + 1 < words.endIndex else { return nil }
        return Int(words[at + 1])
    }

    /// Finding 3: twenty threads logging in as made-up accounts from fresh addresses held all 16
    /// deskd-auth slots, and the victim's right password was refused 11 times of 12. Now a name
    /// that is no account takes no slot, and a client one at most.
    @Test func aRightPasswordGetsThroughACrowdOfMadeUpNames() throws {
        let cast = try Self.cast(attacker: "deskt-mal2", victim: "deskt-vic2")
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown() }
        let result = try Self.play("slots", base, cast)
        let victim = try #require(result["victim"] as? [[String: Any]])
        let succeeded = victim.filter { $0["status"] as? Int == 200 }.count
        #expect(victim.count == 12 && succeeded == 12, "the victim logged in \(succeeded) times of 12: \(victim)")
        let slowest = victim.compactMap { $0["seconds"] as? Double }.max() ?? 0
        print("PortalCrowdTests: the victim's slowest login took \(slowest) s; the crowd got \(result["attacker"] ?? "")")
    }

    /// Suspected: a stack that leaves a question pending (here, a password that must be changed)
    /// let anyone fill the 32 pending questions. Now a client and an account have two each.
    @Test func oneAccountCannotFillThePendingQuestions() throws {
        let cast = try Self.cast(attacker: "deskt-pend1", victim: "deskt-pend2")
        for account in [cast.attacker, cast.victim] {
            try #require(try CommandResult.run("/usr/bin/chage", ["-d", "0", account.name]).status == 0)
        }
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown() }
        let result = try Self.play("pending", base, cast)
        let attacker = try #require(result["attacker"] as? [String: Int]), victim = try #require(result["victim"] as? [String: Any])
        #expect((attacker["question"] ?? 0) <= 2, "one account left \(attacker["question"] ?? 0) questions pending: \(attacker)")
        #expect(victim["question"] as? String != nil, "the victim got no question: \(victim)")
    }

    /// Finding 4: forty junk logins (no account, no cookie) were audited as uid 0 and used up
    /// root's allowance, and root's link and password rotation that followed were not written.
    /// A refused login was written as if its victim had made it.
    @Test func anonymousLoginsCannotStarveRootsTrail() throws {
        let cast = try Self.cast(attacker: "deskt-mal3", victim: "deskt-vic3")
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown(); TestUsers.reap(cast.victim) }
        let session = try daemon.start(cast.victim.name)
        // A wrong password at the victim's account, then the crowd: root's lines must follow it.
        let wrong = try CommandResult.run("/usr/bin/python3", ["-c", """
            import http.client, json
            c = http.client.HTTPConnection("127.0.0.1", \(URL(string: base)!.port!), timeout=30)
            c.request("POST", "/api/login", body=json.dumps({"user": "\(cast.victim.name)", "password": "wrong"}),
                      headers={"Origin": "\(base)", "Content-Type": "application/json"})
            print(c.getresponse().status)
            """])
        #expect(wrong.stdout.hasPrefix("403"))
        let junk = try Self.play("junk", base, cast)
        #expect(junk["refused"] as? Int == 40, "\(junk)")
        let link = try daemon.deskctl(["url", session.display.description, "--json"])
        let passwd = try daemon.deskctl(["passwd", session.display.description, "--json"])
        #expect(link.status == 0 && passwd.status == 0, "\(link.stderr)\(passwd.stderr)")
        let history = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self)
        #expect(history.contains { $0.command == .url && $0.peerUID == 0 && $0.ok }, "root's link is not in the trail")
        #expect(history.contains { $0.command == .passwd && $0.peerUID == 0 && $0.ok }, "root's password rotation is not in the trail")
        let logins = history.filter { $0.command == .login }
        #expect(!logins.isEmpty && logins.allSatisfy { $0.peerUID == nil && $0.peerUser == nil && $0.detail?.hasPrefix("web from 127.") == true },
                "a login was written as someone's: \(logins)")
        #expect(logins.contains { $0.user == cast.victim.name && $0.uid == cast.victim.uid && !$0.ok }, "the refused login at the victim is not the victim's to see")
        let seen = try daemon.deskctl(["history", "--json"], as: cast.victim.name).decode([AuditEntry].self)
        #expect(seen.contains { $0.command == .login && $0.user == cast.victim.name && !$0.ok }, "the victim does not see the attempt at their account")
    }

    /// Finding 5: 11,070 made-up share ids were each remembered five minutes. Now an id that is
    /// no share of the session is refused, with a sentence, and nothing is kept.
    @Test func madeUpShareIdsAreRefusedAndNotRemembered() throws {
        let cast = try Self.cast(attacker: "deskt-mal4", victim: "deskt-vic4")
        let (daemon, _) = try PortalTests.daemon()
        defer { daemon.shutDown(); TestUsers.reap(cast.attacker) }
        let session = try daemon.start(cast.attacker.name)
        let display = session.display.description
        var accepted = 0, sentence = ""
        // 50: a user's credential changes are 60 a minute (the next test), and two more follow.
        for _ in 0..<50 {
            let share = BrowserLinksShare.random()
            let run = try daemon.deskctl(["url", "--revoke", "--share", share, display], as: cast.attacker.name)
            if run.status == 0 { accepted += 1 } else { sentence = run.stderr }
        }
        #expect(accepted == 0, "\(accepted) made-up shares were taken back")
        #expect(sentence.contains("is no share of \(display)") && sentence.contains("deskctl url --shares"), "\(sentence)")
        // A real share is still taken back.
        let link = try daemon.deskctl(["url", display, "--json"], as: cast.attacker.name).decode(BrowserLink.self)
        let share = try #require(link.share)
        let revoked = try daemon.deskctl(["url", "--revoke", "--share", share, display, "--json"], as: cast.attacker.name).decode(LinkRevocation.self)
        #expect(revoked.links == 1)
    }

    /// The review of issue 41's change: credential changes are always in the trail, so a loop of
    /// them (passwd, url, url --revoke, extend) could rotate the trail's real entries out. A user
    /// makes 60 a minute; every one made is written, and the next is refused with a sentence.
    @Test func aLoopOfCredentialChangesIsRefusedNotLeftOutOfTheTrail() throws {
        let user = try TestUsers.ensure("deskt-loop")
        let (daemon, _) = try PortalTests.daemon()
        defer { daemon.shutDown(); TestUsers.reap(user) }
        let display = try daemon.start(user.name).display.description
        var made = 0, refusal = ""
        let began = ContinuousClock.now
        for _ in 0..<80 {
            let run = try daemon.deskctl(["passwd", display], as: user.name)
            if run.status == 0 { made += 1 } else { refusal = run.stderr }
        }
        // A minute's allowance at once, then one a second as the bucket refills.
        let seconds = Int((ContinuousClock.now - began).components.seconds) + 1
        #expect(made >= 60 && made <= 60 + seconds, "\(made) password changes in \(seconds) s")
        #expect(refusal.contains("too many links, shares taken back, password changes and extensions") && refusal.contains("try again in"), "\(refusal)")
        let written = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).filter { $0.command == .passwd && $0.ok }
        #expect(written.count == made, "\(written.count) of \(made) password changes are in the trail")
        // root (an admin) is not limited.
        #expect(try daemon.deskctl(["passwd", display]).status == 0)
    }
}
}

/// A well-formed share id nobody issued (12 base64url characters).
enum BrowserLinksShare {
    static func random() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        return String((0..<12).map { _ in alphabet.randomElement()! })
    }
}
