import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// The web portal, end to end: a real deskd and its web front, real accounts with real
/// passwords through PAM (service deskd-web), a real Chromium, and the API from a script.
extension EndToEnd {
@Suite(.enabled(if: TestEnvironment.canRun && BrowserHarness.isReady && UserAccount.named("deskd-web") != nil
                && access("/etc/pam.d/deskd-web", R_OK) == 0,
                "the portal's tests need root, Xtigervnc, Chromium with Playwright, the deskd-web account and /etc/pam.d/deskd-web (scripts/install-deps)"))
struct PortalTests {
    static let browser = TestEnvironment.repository.appendingPathComponent("Tests/browser/portal_in_browser.py").path
    static let api = TestEnvironment.repository.appendingPathComponent("Tests/web/portal_api.py").path
    static let singleSignOn = TestEnvironment.repository.appendingPathComponent("Tests/web/portal_sso.py").path
    static let clusterForm = TestEnvironment.repository.appendingPathComponent("Tests/browser/portal_cluster_form.py").path

    /// A stand-in Slurm for the page's cluster form: sinfo offers debug (4 cores) and short
    /// (MaxTime 0:30:00, 2 cores), sbatch takes job 77, squeue shows it running on node7 with its
    /// time left (the extensions scontrol took added), scontrol and scancel take what they are given.
    static func standInSlurm() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-fake-slurm-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scripts = [
            "sinfo": "printf '%s\\n' 'debug*|infinite|4|(null)|up' 'short|30:00|2|(null)|up'",
            "sbatch": "cat >/dev/null; date +%s > \(directory)/started; echo 77",
            "squeue": """
                [ -f \(directory)/started ] || exit 0
                extra=$(cat \(directory)/extended 2>/dev/null || echo 0)
                left=$(( $(cat \(directory)/started) + 1200 + extra - $(date +%s) ))
                printf '77|RUNNING|None|node7|short|20:00|%d:%02d:%02d|N/A\\n' $((left / 3600)) $((left % 3600 / 60)) $((left % 60))
                """,
            "scontrol": "echo $(( $(cat \(directory)/extended 2>/dev/null || echo 0) + 1800 )) > \(directory)/extended",
            "scancel": "rm -f \(directory)/started",
        ]
        for (name, body) in scripts {
            let path = directory + "/" + name
            try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        // sbatch runs as the user (through runuser) and notes the job's start here.
        chmod(directory, 0o1777)
        return directory
    }

    /// A fresh password for a throwaway account (hex: nothing a shell or chpasswd reads specially).
    static func givePassword(to account: UserAccount) throws -> String {
        let password = "Pw-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let set = try CommandResult.run("/bin/sh", ["-c", "printf '%s:%s\\n' \"$1\" \"$2\" | /usr/sbin/chpasswd", "sh", account.name, password])
        try #require(set.status == 0, "chpasswd: \(set.stderr)")
        return password
    }

    static func daemon(extra: String = "") throws -> (DaemonUnderTest, base: String) {
        let port = try #require(InternetSocketAddress.freeLoopbackPort())
        let daemon = try DaemonUnderTest(config: "[web]\nlisten = \"127.0.0.1:\(port)\"\n" + extra)
        return (daemon, "http://127.0.0.1:\(port)")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    @Test func aUserLogsInStartsOpensSharesAndEndsADesktopInChromium() throws {
        let owner = try TestUsers.ensure("deskt-pia"), viewer = try TestUsers.ensure("deskt-ravi")
        let ownerPassword = try Self.givePassword(to: owner), viewerPassword = try Self.givePassword(to: viewer)
        // A short idle timeout, so the page's own logout is seen within the test; and deskd's own
        // idle reaping, whose deadline an unwatched desktop's card counts down.
        let (daemon, base) = try Self.daemon(extra: "session_idle = \"40s\"\n\n[sessions]\nidle_limit = \"2h\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner); TestUsers.reap(viewer) }
        let typed = owner.home + "/portal-typed-\(UUID().uuidString.prefix(6))", watched = owner.home + "/portal-watched-\(UUID().uuidString.prefix(6))"
        defer { unlink(typed); unlink(watched) }
        let shots = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-portal-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)

        let run = try CommandResult.run("/usr/bin/python3", [
            Self.browser, "flow", "--url", base, "--user", owner.name, "--password", ownerPassword,
            "--viewer", viewer.name, "--viewer-password", viewerPassword,
            "--type", "echo typed > \(typed)", "--viewer-type", "echo watched > \(watched)",
            "--screenshots", shots, "--wait-logout", "90",
        ])
        print("PortalTests: the browser's walk (screenshots in \(shots)): \(run.stdout)")
        let result = try Self.json(run.stdout)
        #expect(result["error"] is NSNull, "the walk stopped: \(result["error"] ?? "")\n\(run.stderr)\n\(daemon.logText.suffix(3000))")
        #expect((result["wrongPassword"] as? String)?.contains("password is wrong") == true)
        let cookie = try #require(result["cookie"] as? [String: Any])
        #expect(cookie["httpOnly"] as? Bool == true && cookie["secure"] as? Bool == true && cookie["sameSite"] as? String == "Strict" && cookie["path"] as? String == "/")
        #expect((result["card"] as? String)?.contains("ready") == true && (result["card"] as? String)?.contains("xterm") == true, "\(result["card"] ?? "")")
        #expect((result["card"] as? String)?.contains("Ends unwatched in\n2 h without a viewer") == true || (result["card"] as? String)?.contains("Ends unwatched in\n1 h 59 min without a viewer") == true, "\(result["card"] ?? "")")
        #expect((result["title"] as? String)?.contains("ready") == true, "the title: \(result["title"] ?? "")")
        #expect(((result["desktop"] as? [String: Any])?["colours"] as? Int ?? 0) > 1)
        // One click on Start showed the desktop: the tab it opened was noVNC's, handed its link
        // by the portal, and its address kept no token.
        let startTab = try #require(result["startTab"] as? [String: Any], "\(result)")
        #expect(result["startOpens"] as? Bool == true && startTab["viewer"] as? String == "open" && (startTab["colours"] as? Int ?? 0) > 1, "\(startTab)")
        #expect((startTab["address"] as? String)?.contains("/vnc.html#") == true && (startTab["address"] as? String)?.contains("deskd_token") == false, "\(startTab)")
        #expect(eventually(5) { (try? String(contentsOfFile: typed, encoding: .utf8)) == "typed\n" }, "the owner's keys did not reach the xterm")
        #expect(result["viewerCards"] as? Int == 0, "the second user saw another's desktop")
        #expect(((result["viewerDesktop"] as? [String: Any])?["width"] as? Int ?? 0) > 0, "the view-only link did not show the desktop")
        #expect(access(watched, F_OK) != 0, "a view-only viewer typed into the desktop")
        // The share was the viewer's alone: a browser logged in as nobody was refused; the card
        // listed it with its browser, and taking it back closed that browser (the walk waited for it).
        #expect((result["strangerSaw"] as? String)?.contains("named people only") == true, "\(result["strangerSaw"] ?? "")")
        #expect((result["shareLabel"] as? String)?.contains("for \(viewer.name)") == true, "\(result["shareLabel"] ?? "")")
        #expect((result["shareListed"] as? String)?.contains("for \(viewer.name): 1 browser") == true, "\(result["shareListed"] ?? "")")
        #expect((result["endedCard"] as? String)?.contains("ended") == true)
        #expect((result["endedCard"] as? String)?.contains("killed by deskctl kill") == true || (result["endedCard"] as? String)?.contains("Why") == true,
                "the ended card says why: \(result["endedCard"] ?? "")")
        // axe-core finds no serious or critical violation on the login page or the card list.
        #expect((result["axeLogin"] as? [Any])?.isEmpty == true, "axe on the login page: \(result["axeLogin"] ?? "not run")")
        #expect((result["axeCards"] as? [Any])?.isEmpty == true, "axe on the card list: \(result["axeCards"] ?? "not run")")
        #expect((result["loggedOutMessage"] as? String)?.contains("without activity") == true, "\(result["loggedOutMessage"] ?? "not logged out")")
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty, "End left a session")
        // The audit trail has the refused and the accepted login, with the browser's address.
        let history = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).filter { $0.command == .login && $0.user == owner.name }
        #expect(history.map(\.ok) == [false, true] && history.allSatisfy { $0.detail == "web from 127.0.0.1" }, "\(history)")
    }

    @Test func theAPIIsTheControlProtocolForTheLoggedInUserAndRefusesEveryoneElse() throws {
        let owner = try TestUsers.ensure("deskt-pia"), other = try TestUsers.ensure("deskt-ravi"), expired = try TestUsers.ensure("deskt-xena")
        let ownerPassword = try Self.givePassword(to: owner), otherPassword = try Self.givePassword(to: other)
        let expiredPassword = try Self.givePassword(to: expired)
        try #require(try CommandResult.run("/usr/bin/chage", ["-E", "0", expired.name]).status == 0)
        defer { _ = try? CommandResult.run("/usr/bin/chage", ["-E", "-1", expired.name]) }
        // An account whose password must change before it logs in (chage -d 0).
        let changer = try TestUsers.ensure("deskt-yuri")
        let changerPassword = try Self.givePassword(to: changer)
        let newPassword = "Nw-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "-Q7"
        try #require(try CommandResult.run("/usr/bin/chage", ["-d", "0", changer.name]).status == 0)
        let (daemon, base) = try Self.daemon()
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name, as: owner.name)

        let run = try CommandResult.run("/usr/bin/python3", [Self.api, base, owner.name, ownerPassword, other.name, otherPassword,
                                                             expired.name, expiredPassword, "\(session.display.number)",
                                                             changer.name, changerPassword, newPassword])
        print("PortalTests: the API → \(run.stdout)\(run.stderr)")
        let result = try Self.json(run.stdout)

        // Headers on the page: a CSP of its own origin only, no framing, no sniffing, no referrer.
        let page = try #require(result["page"] as? [String: Any])
        #expect((page["Content-Security-Policy"] as? String)?.hasPrefix("default-src 'self'") == true)
        #expect((page["Content-Security-Policy"] as? String)?.contains("frame-ancestors 'none'") == true)
        #expect(page["X-Frame-Options"] as? String == "DENY" && page["X-Content-Type-Options"] as? String == "nosniff"
                && page["Referrer-Policy"] as? String == "no-referrer")
        // The login cookie's flags; other sites and pages without the token are refused.
        #expect(result["ownerLogin"] as? Int == 200)
        #expect((result["setCookie"] as? String) == "deskd_web=COOKIE; Secure; HttpOnly; SameSite=Strict; Path=/")
        #expect(result["foreignLogin"] as? Int == 403 && result["loginWithoutOrigin"] as? Int == 403)
        // Bodies at the limit (one that grows sixfold on its way to deskd) are refused, and the front stays.
        #expect(result["hugePassword"] as? Int == 400 && result["controlCharacters"] as? Int == 400 && result["servedAfterHugeBodies"] as? Int == 200,
                "\(result["hugePassword"] ?? "") \(result["controlCharacters"] ?? "") \(result["servedAfterHugeBodies"] ?? "")")
        #expect(!daemon.logText.contains("web front cut off"))
        #expect(result["requestWithoutCSRF"] as? Int == 403 && result["requestForeign"] as? Int == 403 && result["sessionGETForeign"] as? Int == 403)

        // The same verbs as deskctl, the same answers: list, show and desktops side by side.
        let api = try #require(result["api"] as? [String: [String: Any]])
        func sessions(_ name: String) -> [[String: Any]] { ((api[name]?["answer"] as? [String: Any])?["sessions"] as? [[String: Any]]) ?? [] }
        let listed = try daemon.deskctl(["list", "--json"], as: owner.name).decode(SessionList.self).sessions
        #expect(sessions("list").compactMap { $0["id"] as? String } == listed.map(\.id))
        #expect(sessions("list").compactMap { $0["display"] as? Int } == listed.map(\.display.number))
        let shown = try daemon.deskctl(["show", session.display.description, "--json"], as: owner.name).decode(Session.self)
        #expect(sessions("show").first?["id"] as? String == shown.id && sessions("show").first?["state"] as? String == shown.state.rawValue)
        let desktops = try daemon.deskctl(["desktops", "--json"], as: owner.name).decode([DesktopInfo].self)
        let apiDesktops = ((api["desktops"]?["answer"] as? [String: Any])?["desktops"] as? [[String: Any]]) ?? []
        #expect(apiDesktops.compactMap { $0["name"] as? String } == desktops.map(\.name) && !desktops.isEmpty)
        func answer(_ name: String) -> [String: Any] { api[name]?["answer"] as? [String: Any] ?? [:] }
        func status(_ name: String) -> Int? { api[name]?["status"] as? Int }
        func errorOf(_ name: String) -> (code: String?, message: String?) {
            let error = answer(name)["error"] as? [String: Any]
            return (error?["code"] as? String, error?["message"] as? String)
        }
        /// deskctl's --json failure for the same request: its code and sentence.
        func deskctlError(_ arguments: [String]) throws -> (code: String?, message: String?) {
            let run = try daemon.deskctl(arguments + ["--json"], as: owner.name)
            #expect(run.status != 0, "deskctl \(arguments) succeeded")
            let error = (try? Self.json(run.stdout))?["error"] as? [String: Any]
            return (error?["code"] as? String, error?["message"] as? String)
        }
        let ping = try daemon.deskctl(["status", "--json"], as: owner.name).decode(DaemonStatus.self)
        #expect(answer("ping")["daemonVersion"] as? String == ping.daemonVersion)
        let apiStatus = answer("status")["status"] as? [String: Any]
        #expect(apiStatus?["daemonVersion"] as? String == ping.daemonVersion && apiStatus?["sessions"] as? Int == ping.sessions)
        // history: what the API saw is what deskctl sees, in order (entries written since may follow).
        let deskctlHistory = try daemon.deskctl(["history", "--json"], as: owner.name).decode([AuditEntry].self)
        let apiHistory = (answer("history")["history"] as? [[String: Any]]) ?? []
        #expect(!apiHistory.isEmpty && apiHistory.map { "\($0["command"] ?? "")/\($0["outcome"] ?? "")" }
                == deskctlHistory.prefix(apiHistory.count).map { "\($0.command.rawValue)/\($0.outcome)" }, "\(apiHistory) vs \(deskctlHistory)")
        let deskctlLogs = try daemon.deskctl(["logs", session.display.description, "--lines", "5", "--json"], as: owner.name).decode(SessionLogs.self)
        let apiLogs = answer("logs")["logs"] as? [String: Any]
        #expect((apiLogs?["session"] as? [String: Any])?["id"] as? String == deskctlLogs.session.id)
        #expect(((apiLogs?["processes"] as? [[String: Any]]) ?? []).compactMap { $0["role"] as? String } == deskctlLogs.processes.map(\.role.rawValue))
        let deskctlProbe = try daemon.deskctl(["probe", session.display.description, "--json"], as: owner.name).decode(ProbeReport.self)
        let apiProbe = answer("probe")["probe"] as? [String: Any]
        #expect(apiProbe?["answered"] as? Bool == true && apiProbe?["width"] as? Int == deskctlProbe.width && apiProbe?["desktopName"] as? String == deskctlProbe.desktopName)
        // The error contract: the same code and the same sentence, and the HTTP status the code maps to.
        for (name, arguments, http) in [("showMissing", ["show", ":99"], 404), ("killMissing", ["kill", ":99"], 404),
                                        ("badDesktop", ["start", "--desktop", "no-such-desktop"], 400),
                                        ("extendLocal", ["extend", session.display.description, "--by", "10m"], 400)] {
            let expected = try deskctlError(arguments)
            #expect(status(name) == http && errorOf(name).code == expected.code && errorOf(name).message == expected.message,
                    "\(name): API \(status(name) ?? 0) \(errorOf(name)) vs deskctl \(expected)")
        }
        // metrics has no --json: its sentence on stderr is the API's.
        let metricsRefused = try daemon.deskctl(["metrics"], as: owner.name)
        #expect(status("metrics") == 403 && errorOf("metrics").code == "permission-denied" && metricsRefused.status != 0
                && metricsRefused.stderr.contains(errorOf("metrics").message ?? "?"), "\(metricsRefused.stderr)")
        let deskctlShares = try daemon.deskctl(["url", "--shares", session.display.description, "--json"], as: owner.name).decode([LinkShare].self)
        #expect(status("shares") == 200 && (answer("shares")["shares"] as? [Any])?.count == deskctlShares.count)

        // deskctl's side of sharing: a link for a named account, the shares listed, one taken back.
        let display = session.display.description
        let named = try daemon.deskctl(["url", display, "--view-only", "--for", other.name, "--ttl", "10m", "--json"], as: owner.name).decode(BrowserLink.self)
        let share = try #require(named.share)
        #expect(named.viewers == [other.name] && named.viewOnly && UrlRequest.isPlausibleShare(share))
        let anyone = try daemon.deskctl(["url", display, "--json"], as: owner.name).decode(BrowserLink.self)
        let listedShares = try daemon.deskctl(["url", "--shares", display, "--json"], as: owner.name).decode([LinkShare].self)
        #expect(Set(listedShares.map(\.share)) == [share, anyone.share] && listedShares.first { $0.share == share }?.viewers == [other.name])
        let table = try daemon.deskctl(["url", "--shares", display], as: owner.name).stdout
        #expect(table.hasPrefix("SHARE") && table.contains(other.name) && table.contains("anyone with the link"), "\(table)")
        let unknown = try daemon.deskctl(["url", display, "--for", "no-such-account-q"], as: owner.name)
        #expect(unknown.status != 0 && unknown.stderr.contains("no-such-account-q is no account here"), "\(unknown.stderr)")
        #expect(try daemon.deskctl(["url", "--shares", display], as: other.name).status != 0, "another user listed the owner's shares")
        let taken = try daemon.deskctl(["url", "--revoke", "--share", share, display, "--json"], as: owner.name).decode(LinkRevocation.self)
        #expect(taken.links == 1)
        #expect(try daemon.deskctl(["url", "--shares", display, "--json"], as: owner.name).decode([LinkShare].self).map(\.share) == [anyone.share])
        // Another user: none of the owner's desktops, and no kill of one.
        #expect(((result["otherList"] as? [String: Any])?["sessions"] as? [Any])?.isEmpty == true, "\(result["otherList"] ?? "")")
        let kill = try #require(result["otherKill"] as? [Any])
        #expect(kill.first as? Int == 403 && ((kill.last as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "permission-denied")
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.count == 1, "another user's kill went through")
        // root is on the deny list; an expired account is refused with why; logout ends the cookie.
        let rootMessage = ((result["root"] as? [String: Any])?["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(rootMessage.contains("deny_users"), "\(rootMessage)")
        let expiredMessage = ((result["expired"] as? [String: Any])?["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(expiredMessage.contains("expired"), "\(expiredMessage)")
        #expect(result["afterLogout"] as? Int == 401)
        // PAM's forced password change, question by question in the same login, then the new password.
        let asked = result["forcedChange"] as? [String] ?? []
        #expect(asked.first == "Current password: " && asked.contains("New password: ") && asked.contains("Retype new password: ")
                && asked.last == "logged in", "\(asked)")
        #expect(asked.contains { $0.contains("required to change your password") }, "the module's message was not shown: \(asked)")
        #expect(result["newPasswordWorks"] as? Bool == true)
        // Wrong passwords from one address: the portal makes it wait, and then refuses even the right one.
        let attempts = result["throttleAttempts"] as? [String] ?? []
        #expect(attempts.last?.contains("Too many failed logins") == true && attempts.count <= 6, "\(attempts)")
        #expect(attempts.dropLast().allSatisfy { $0 == "The user name or password is wrong." }, "\(attempts)")
        let throttled = ((result["rightPasswordWhileThrottled"] as? [String: Any])?["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(throttled.contains("Too many failed logins"), "\(throttled)")
        let logins = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).filter { $0.command == .login }
        #expect(logins.contains { $0.outcome == "throttled" } && logins.contains { $0.user == expired.name && !$0.ok })
    }

    /// Single sign-on from a trusted proxy, both ways: the proxy's user logged in (and only as
    /// long as the proxy names them), the header refused on every route from any other address;
    /// the page's live updates (server-sent events); and a password login ending when its
    /// password changes or its account is locked.
    @Test func aTrustedProxySignsUsersOnAndNoOneElseMayNameAUser() throws {
        let signedOn = try TestUsers.ensure("deskt-sso"), other = try TestUsers.ensure("deskt-lock")
        let otherPassword = try Self.givePassword(to: other)
        let newPassword = "Nw-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "-K4"
        let (daemon, base) = try Self.daemon(extra: "trusted_proxies = [\"127.0.0.1\"]\nsso_header = \"X-Remote-User\"\n")
        defer {
            daemon.shutDown()
            TestUsers.reap(signedOn)
            _ = try? CommandResult.run("/usr/sbin/usermod", ["-U", other.name])
        }
        let desktop = try daemon.start(signedOn.name, as: signedOn.name)
        let named = try daemon.deskctl(["url", desktop.display.description, "--for", other.name, "--json"], as: signedOn.name).decode(BrowserLink.self)
        let namedToken = try #require(named.url.split(separator: "#token=").last.map(String.init))

        let run = try CommandResult.run("/usr/bin/python3", [Self.singleSignOn, base, signedOn.name, other.name, otherPassword, newPassword, namedToken])
        print("PortalTests: single sign-on → \(run.stdout)\(run.stderr)")
        let result = try Self.json(run.stdout)

        // Through the proxy: logged in as the user it names, with a cookie, seeing their desktop.
        let proxied = try #require(result["proxied"] as? [String: Any])
        #expect(proxied["status"] as? Int == 200 && proxied["user"] as? String == signedOn.name
                && proxied["singleSignOn"] as? Bool == true && proxied["cookie"] as? Bool == true, "\(proxied)")
        let list = try #require(result["proxiedList"] as? [String: Any])
        #expect(list["status"] as? Int == 200 && list["users"] as? [String] == [signedOn.name], "\(list)")
        // Live updates: the stream is there for a login only; a kill through the API reaches it as
        // a change, and the logout as its end.
        #expect(result["eventsWithoutLogin"] as? Int == 401)
        let stream = try #require(result["eventsHeaders"] as? [String: Any])
        #expect(stream["status"] as? Int == 200 && (stream["type"] as? String)?.hasPrefix("text/event-stream") == true, "\(stream)")
        #expect(result["killThroughAPI"] as? Int == 200 && result["listAfterKill"] as? Int == 0)
        #expect(result["changeSeconds"] is Double, "no change event within 20 s of the kill")
        #expect(result["logoutSeconds"] is Double, "no logout event within 20 s of the logout")
        // The same cookie under another name from the proxy is no login; root and strangers are not signed on.
        #expect(result["otherUserSameCookie"] as? Int == 401)
        #expect(result["root"] as? Int == 403 && result["nobodyHere"] as? Int == 403, "\(result["root"] ?? "") \(result["nobodyHere"] ?? "")")
        // From an address that is no trusted proxy, the header is refused on every route.
        for key in ["forgedSession", "forgedRequest", "forgedPage", "forgedOpen", "forgedUpgrade"] {
            #expect(result[key] as? Int == 403, "\(key): \(result[key] ?? "")")
        }
        #expect(result["plainSession"] as? Int == 401)
        // A password change ends the logins made with the old one; the new one logs in; a lock ends it too.
        #expect(result["otherLogin"] as? Int == 200 && result["beforeChange"] as? Int == 200)
        #expect(result["afterChange"] as? Int == 401 && result["newLogin"] as? Int == 200 && result["newLoginWorks"] as? Int == 200)
        #expect(result["afterLock"] as? Int == 401)
        // Issue 41: a link for named accounts checks the login against the user the proxy names now.
        #expect(result["namedLinkUnderAnotherSignedOnUser"] as? Int == 403, "\(result["namedLinkUnderAnotherSignedOnUser"] ?? "")")
        #expect(result["namedLinkForItsViewer"] as? Int == 200, "\(result["namedLinkForItsViewer"] ?? "")")
        // The audit trail names the proxy; the gateway counted the forgeries.
        let logins = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).filter { $0.command == .login && $0.ok }
        #expect(logins.contains { $0.user == signedOn.name && $0.outcome.contains("single sign-on via 127.0.0.1") }, "\(logins)")
        let metrics = try daemon.deskctl(["metrics"]).stdout
        #expect(metrics.contains("reason=\"forged-user\""), "no forged-user refusals counted")
    }

    /// The start form's cluster part in Chromium, against a stand-in Slurm: the partition's limit
    /// refused at the field with nothing sent, a start with a time and cores, the card's job,
    /// node and live time left, and Extend; axe on the form.
    @Test func theClusterFormChecksSlurmsLimitsAndACardExtendsItsDesktop() throws {
        let user = try TestUsers.ensure("deskt-form")
        let password = try Self.givePassword(to: user)
        let slurm = try Self.standInSlurm()
        defer { try? FileManager.default.removeItem(atPath: slurm) }
        let report = try #require(InternetSocketAddress.freeLoopbackPort())
        let (daemon, base) = try Self.daemon(extra: """

            [slurm]
            listen = "127.0.0.1:\(report)"
            commands = "\(slurm)"
            partition = "debug"
            time = "0:10:00"
            extend_max = "1h"
            start_wait = "1s"
            poll_interval = "1s"
            """)
        defer { daemon.shutDown(); TestUsers.reap(user) }
        let shots = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-portal-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)

        let run = try CommandResult.run("/usr/bin/python3", [Self.clusterForm, "--url", base, "--user", user.name, "--password", password, "--screenshots", shots])
        print("PortalTests: the cluster form (screenshots in \(shots)): \(run.stdout)")
        let result = try Self.json(run.stdout)
        #expect(result["error"] is NSNull, "the walk stopped: \(result["error"] ?? "")\n\(run.stderr)\n\(daemon.logText.suffix(2000))")
        #expect(result["partitions"] as? [String] == ["debug (default)", "short"], "\(result["partitions"] ?? "")")
        #expect((result["timeHint"] as? String)?.contains("at most 30 min") == true && result["gpusShown"] as? Bool == false)
        #expect((result["tooLong"] as? String)?.contains("30 min at most") == true && result["tooLongInvalid"] as? String == "true")
        #expect(result["cardsAfterRefusal"] as? Int == 0)
        #expect((result["axeForm"] as? [Any])?.isEmpty == true, "axe on the cluster form: \(result["axeForm"] ?? "not run")")
        let card = result["card"] as? String ?? ""
        #expect(card.contains("77 in short") && card.contains("node7") && card.contains("Time left"), "\(card)")
        let times = result["timeLeft"] as? [String] ?? []
        let minutes = times.compactMap { $0.split(separator: ":").first.flatMap { Int($0) } }
        #expect(minutes.count == 2 && (19...20).contains(minutes[0]) && (49...50).contains(minutes[1]), "\(times)")
        // What the page sent: the form's choices, as sbatch's arguments; and the extension, audited.
        let submitted = try String(contentsOfFile: slurm + "/extended", encoding: .utf8)
        #expect(submitted.trimmingCharacters(in: .whitespacesAndNewlines) == "1800")
        let history = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self)
        #expect(history.contains { $0.command == .extend && $0.ok && $0.user == user.name }, "\(history.map(\.outcome))")
        #expect(history.contains { $0.command == .start && $0.ok && $0.user == user.name }, "\(history.map { "\($0.command) \($0.outcome) \($0.user ?? "-")" })")
    }
}
}
