import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// The portal's file calls, end to end: a real deskd and its web front, real accounts through
/// PAM, deskd-files as each user, and Tests/web/portal_files.py trying every call as the owner,
/// as a second user, from another site and with a view-only link's cookie.
extension EndToEnd {
@Suite(.enabled(if: TestEnvironment.canRun && UserAccount.named("deskd-web") != nil && access("/etc/pam.d/deskd-web", R_OK) == 0,
                "the file calls' tests need root, Xtigervnc, the deskd-web account and /etc/pam.d/deskd-web (scripts/install-deps)"))
struct FilesTests {
    static let script = TestEnvironment.repository.appendingPathComponent("Tests/web/portal_files.py").path

    /// The non-zombie deskd-files processes now (PID 1 here reaps nothing).
    static func helpersRunning() -> Int {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        return pids.filter { pid in
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), comm == "deskd-files\n" else { return false }
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            return !status.contains("State:\tZ")
        }.count
    }

    @Test func anOwnerMovesFilesAsThemselvesAndNoOneElseGetsAByte() throws {
        let owner = try TestUsers.ensure("deskt-fia"), other = try TestUsers.ensure("deskt-fox")
        let ownerPassword = try PortalTests.givePassword(to: owner), otherPassword = try PortalTests.givePassword(to: other)
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown(); TestUsers.reap(owner); TestUsers.reap(other) }
        let ownerSession = try daemon.start(owner.name, as: owner.name), otherSession = try daemon.start(other.name, as: other.name)

        // What each home holds before: private files, links planted to the other's and to root's.
        let downloads = owner.home + "/Downloads"
        let planted = [owner.home + "/secret.txt", other.home + "/secret.txt", owner.home + "/to-other-secret", other.home + "/to-owner-secret",
                       owner.home + "/root-hardlink", owner.home + "/a-fifo"]
        let rootSecret = (owner.home as NSString).deletingLastPathComponent + "/.deskd-test-root-secret"
        func clean() {
            for path in planted + [rootSecret] { unlink(path) }
            _ = try? CommandResult.run("/bin/rm", ["-rf", downloads])
        }
        clean()
        defer { clean() }
        for (account, text) in [(owner, "owner's secret\n"), (other, "other's secret\n")] {
            try text.write(toFile: account.home + "/secret.txt", atomically: false, encoding: .utf8)
            chown(account.home + "/secret.txt", account.uid, account.gid)
            chmod(account.home + "/secret.txt", 0o600)
        }
        try "root's\n".write(toFile: rootSecret, atomically: false, encoding: .utf8)
        chmod(rootSecret, 0o600)
        // Root makes the hard link (the owner could not: protected_hardlinks); opening it is the owner's business.
        try #require(link(rootSecret, owner.home + "/root-hardlink") == 0)
        try #require(symlink(other.home + "/secret.txt", owner.home + "/to-other-secret") == 0)
        try #require(symlink(owner.home + "/secret.txt", other.home + "/to-owner-secret") == 0)
        try #require(mkfifo(owner.home + "/a-fifo", 0o600) == 0)
        for path in [owner.home + "/to-other-secret", owner.home + "/a-fifo"] { lchown(path, owner.uid, owner.gid) }
        lchown(other.home + "/to-owner-secret", other.uid, other.gid)
        // A folder to download as an archive, with a link that must stay a link.
        try FileManager.default.createDirectory(atPath: downloads + "/sub", withIntermediateDirectories: true)
        try "in a folder\n".write(toFile: downloads + "/sub/a.txt", atomically: false, encoding: .utf8)
        try #require(symlink("/etc/shadow", downloads + "/sub/shadow-link") == 0)
        for path in [downloads, downloads + "/sub", downloads + "/sub/a.txt", downloads + "/sub/shadow-link"] { lchown(path, owner.uid, owner.gid) }

        let big = "/var/tmp/deskd-files-test-\(UUID().uuidString.prefix(6)).bin"
        defer { unlink(big) }
        try #require(try CommandResult.run("/bin/sh", ["-c", "head -c \(256 << 20) /dev/urandom > \(big)"]).status == 0)
        let share = try BrowserGatewayTests.link(daemon, ownerSession.display, viewOnly: true, as: owner.name)
        let token = try #require(share.url.split(separator: "token=").last.map(String.init))

        let run = try CommandResult.run("/usr/bin/python3", [Self.script, base, owner.name, ownerPassword, ownerSession.id,
                                                             other.name, otherPassword, otherSession.id, big, token])
        print("FilesTests: the file calls → \(run.stdout)\(run.stderr.suffix(2000))")
        let result = try PortalTests.json(run.stdout)
        func field(_ name: String) -> [String: Any] { result[name] as? [String: Any] ?? [:] }

        // The owner's uploads land in ~/Downloads (made on the first), theirs, named as asked.
        #expect(field("small")["put"] as? Int == 201 && (field("small")["answer"] as? [String: Any])?["name"] as? String == "hello world.txt", "\(field("small"))")
        #expect(field("again")["begin"] as? Int == 409 && field("again")["code"] as? String == "exists", "\(field("again"))")
        #expect((field("again")["message"] as? String)?.contains("exists: keep both, or replace it") == true)
        #expect((field("keepBoth")["answer"] as? [String: Any])?["name"] as? String == "hello world (1).txt", "\(field("keepBoth"))")
        #expect((field("replace")["answer"] as? [String: Any])?["name"] as? String == "hello world.txt", "\(field("replace"))")
        #expect(field("empty")["put"] as? Int == 201)
        #expect(field("badName")["begin"] as? Int == 400 && field("dotDot")["begin"] as? Int == 400 && field("badFolder")["begin"] as? Int == 400)
        #expect(field("tooLarge")["status"] as? Int == 413 && field("tooLarge")["code"] as? String == "too-large", "\(field("tooLarge"))")
        #expect((try? String(contentsOfFile: downloads + "/hello world.txt", encoding: .utf8)) == "replaced\n")
        #expect((try? String(contentsOfFile: downloads + "/hello world (1).txt", encoding: .utf8)) == "second\n")
        var status = stat()
        #expect(stat(downloads + "/hello world.txt", &status) == 0 && status.st_uid == owner.uid && status.st_gid == owner.gid && status.st_mode & 0o777 == 0o640,
                "an upload is the owner's file, made as them, and a replace keeps the old file's mode")
        #expect(result["uploadMode"] as? String == "0o600" && result["replacedMode"] as? String == "0o640",
                "an upload is private until its owner shares it: \(result["uploadMode"] ?? "") \(result["replacedMode"] ?? "")")
        #expect(field("manyListing")["status"] as? Int == 200 && field("manyListing")["entries"] as? Int == 3000 && field("manyListing")["truncated"] as? Bool == false,
                "\(field("manyListing"))")
        #expect(field("longListing")["status"] as? Int == 200 && (field("longListing")["entries"] as? Int ?? 0) > 1500 && field("longListing")["truncated"] as? Bool == true,
                "\(field("longListing"))")
        // The big file went up and came back whole; ranges and a stale If-Range as HTTP says.
        #expect(field("bigUpload")["put"] as? Int == 201, "\(field("bigUpload"))")
        #expect(field("bigDownload")["sha256"] as? String == result["bigSha256"] as? String && field("bigDownload")["bytes"] as? Int == 256 << 20, "\(field("bigDownload"))")
        #expect(field("bigDownload")["acceptRanges"] as? String == "bytes" && field("bigDownload")["nosniff"] as? String == "nosniff")
        #expect((field("bigDownload")["disposition"] as? String)?.hasPrefix("attachment;") == true && (field("bigDownload")["csp"] as? String)?.hasPrefix("sandbox") == true)
        #expect(field("range")["status"] as? Int == 206 && field("range")["matches"] as? Bool == true && field("range")["contentRange"] as? String == "bytes 1000-1999/\(256 << 20)", "\(field("range"))")
        #expect(field("staleIfRange")["status"] as? Int == 200, "a range for another version of the file is answered with the whole file")
        #expect(field("resume")["tagged"] as? Int == 206 && field("resume")["taggedBytes"] as? String == "pla"
                && field("resume")["byDate"] as? Int == 200 && field("resume")["rewritten"] as? Int == 200, "\(field("resume"))")
        #expect(result["pastEnd"] as? Int == 416 && result["missing"] as? Int == 404)
        #expect(result["smallBack"] as? String == "replaced\n")
        #expect(result["archiveStatus"] as? Int == 200)
        #expect(field("folderArchive")["members"] as? [String] == ["sub", "sub/a.txt", "sub/shadow-link"], "\(field("folderArchive"))")
        #expect(field("folderArchive")["linkKept"] as? [String] == ["sub/shadow-link"], "a link in an archive stays a link, never what it points to")
        #expect((field("folderArchive")["disposition"] as? String)?.contains("sub.tar") == true)
        // The kernel decides for the owner: links to others' private files and root's open nothing, nor does a FIFO.
        #expect(result["ownerSymlinkToOthers"] as? Int == 403 && result["ownerHardLinkToRoots"] as? Int == 403 && result["fifo"] as? Int == 403,
                "\(result["ownerSymlinkToOthers"] ?? "") \(result["ownerHardLinkToRoots"] ?? "") \(result["fifo"] ?? "")")
        // A cut upload leaves no file, named or hidden.
        #expect(result["cutBegin"] as? Int == 201)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
        #expect(!names.contains { $0.contains("cut.bin") || $0.contains("deskd-upload") || $0 == "stolen.txt" || $0 == "planted.txt" }, "\(names)")
        #expect(Set(names) == ["hello world.txt", "hello world (1).txt", "empty.txt", "big.bin", "sub", "many", "long"], "\(names)")

        // The second user gets nothing of the owner's, by any call; their own home by path only.
        let attempts = field("otherOnOwners")
        #expect(attempts.values.allSatisfy { $0 as? Int == 403 }, "\(attempts)")
        #expect(result["otherOnOwnersCode"] as? String == "not-owner")
        #expect(result["otherUp"] as? Int == 400 && result["otherAbsolute"] as? Int == 400 && result["otherEncodedDots"] as? Int == 400)
        #expect(result["otherSymlinkToOwners"] as? Int == 403 && result["otherListsOwnHome"] as? Int == 200)
        #expect(result["stolenPending"] as? Int == 404 && result["pendingWithoutToken"] as? Int == 404, "another's pending upload is no one's but its page's")
        // Another site, no token, no login, a view-only link: no file call.
        #expect(result["foreignBegin"] as? Int == 403 && result["crossSiteDownload"] as? Int == 403 && result["sameSiteDownload"] as? Int == 403 && result["beginWithoutToken"] as? Int == 401)
        #expect(result["noLogin"] as? Int == 401 && result["madeUpSession"] as? Int == 403)
        #expect(result["shareExchange"] as? Int == 200)
        #expect(result["shareCookieList"] as? Int == 401 && result["shareCookieDownload"] as? Int == 401 && result["shareCookieBegin"] as? Int == 401)

        // Recorded and counted; and no helper left running.
        let history = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).filter { $0.command == .upload || $0.command == .download }
        #expect(history.contains { $0.command == .upload && $0.ok && $0.user == owner.name && $0.display == ownerSession.display && $0.outcome == "uploaded ~/Downloads/big.bin" }, "\(history)")
        #expect(history.contains { $0.command == .download && $0.ok && $0.outcome == "downloaded ~/Downloads/big.bin" })
        #expect(history.contains { $0.command == .upload && !$0.ok && $0.outcome.hasPrefix("cancelled") }, "the cut upload is recorded")
        #expect(history.contains { $0.command == .download && !$0.ok && $0.peerUID == other.uid && $0.outcome == "not-owner" }, "the other user's tries are recorded")
        let metrics = try daemon.deskctl(["metrics"]).stdout
        #expect(metrics.contains("deskd_file_transfers_total{direction=\"upload\",result=\"completed\"}"), "\(metrics.split(separator: "\n").filter { $0.contains("file") })")
        // One upload was begun and never brought its bytes (the other user tried to): its helper
        // waits for its minute, and ends with deskd's web front.
        #expect(eventually(5) { Self.helpersRunning() == 1 }, "deskd-files processes: \(Self.helpersRunning())")
        daemon.shutDown()
        #expect(eventually(5) { Self.helpersRunning() == 0 }, "deskd-files processes are left")
    }

    /// The file view in Chromium: three files picked (one of 1 GiB) land in ~/Downloads, and the
    /// desktop's own shell lists them; a taken name asks; a large upload cancelled leaves nothing;
    /// one file comes back through its Download link whole; axe finds nothing serious.
    @Test(.enabled(if: BrowserHarness.isReady, BrowserHarness.skipReason))
    func theFileViewUploadsDownloadsAndCancelsInChromium() throws {
        let owner = try TestUsers.ensure("deskt-fib")
        let password = try PortalTests.givePassword(to: owner)
        let (daemon, base) = try PortalTests.daemon()
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name, as: owner.name)
        let downloads = owner.home + "/Downloads", seen = owner.home + "/seen-\(UUID().uuidString.prefix(6)).txt"
        _ = try? CommandResult.run("/bin/rm", ["-rf", downloads])
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-files-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { _ = try? CommandResult.run("/bin/rm", ["-rf", work, downloads]); unlink(seen) }
        // The screenshots stay for a person to look at (files.png, uploading.png, desktop-drop*.png); the rest goes.
        let shots = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-files-shots-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let small = work + "/notes one.txt", medium = work + "/photo.bin", big = work + "/big.bin", huge = work + "/cancel-me.bin"
        try "notes from the browser\n".write(toFile: small, atomically: false, encoding: .utf8)
        try #require(try CommandResult.run("/bin/sh", ["-c", "head -c 3000000 /dev/urandom > '\(medium)' && head -c \(1 << 30) /dev/urandom > '\(big)' && truncate -s 8G '\(huge)'"]).status == 0)

        let run = try CommandResult.run("/usr/bin/python3", [
            TestEnvironment.repository.appendingPathComponent("Tests/browser/portal_files_in_browser.py").path,
            "--url", base, "--user", owner.name, "--password", password, "--files", small, medium, big, "--cancel", huge, "--screenshots", shots,
        ])
        print("FilesTests: the file view in Chromium (screenshots in \(shots)): \(run.stdout)\(run.stderr.suffix(1500))")
        let result = try PortalTests.json(run.stdout)
        #expect(result["error"] is NSNull, "the walk stopped: \(result["error"] ?? "")\n\(daemon.logText.suffix(2000))")
        // A user without ~/Downloads yet: the view opens there, empty, and the first upload makes it.
        #expect(result["openedStatus"] as? String == "Downloads does not exist yet: the first upload makes it.", "\(result["openedStatus"] ?? "")")
        let uploaded = result["uploaded"] as? [String: String] ?? [:]
        #expect(uploaded == ["notes one.txt": "Uploaded as notes one.txt", "photo.bin": "Uploaded as photo.bin", "big.bin": "Uploaded as big.bin"], "\(uploaded)")
        #expect((result["askedAbout"] as? String)?.contains("exists: keep both, or replace it") == true)
        #expect((result["keptBoth"] as? String)?.contains("Uploaded as notes one (1).txt") == true, "\(result["keptBoth"] ?? "")")
        #expect((result["cancelled"] as? String)?.contains("Cancelled") == true)
        #expect(result["sortedBySize"] as? String == "ascending")
        #expect((result["axeFiles"] as? [Any])?.isEmpty == true, "axe on the file view: \(result["axeFiles"] ?? "not run")")
        for (name, source) in [("notes one.txt", small), ("photo.bin", medium), ("big.bin", big)] {
            let same = try CommandResult.run("/usr/bin/cmp", [source, downloads + "/" + name]).status == 0
            #expect(same, "\(name) did not arrive whole")
        }
        #expect(eventually(5) { !((try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []).contains { $0.contains("cancel-me") || $0.contains("deskd-upload") } },
                "a cancelled upload left a file")
        var made = stat()
        #expect(stat(downloads, &made) == 0 && made.st_uid == owner.uid && made.st_mode & 0o777 == 0o700, "the upload folder deskd-files made is the owner's alone")
        if let downloaded = result["downloaded"] as? String {
            #expect(try CommandResult.run("/usr/bin/cmp", [small, downloaded]).status == 0, "the download is not the file")
            unlink(downloaded)
        }
        // Dropped on the desktop's own page (noVNC, from the card's Open): into Downloads, with the overlay.
        #expect(result["desktopSession"] as? String == session.id && result["desktopOffer"] as? String == "offered", "\(result["desktopOffer"] ?? "")")
        #expect(result["dropHint"] as? String == "Drop to upload to Downloads", "\(result["dropHint"] ?? "")")
        #expect(result["dropCancelled"] as? [String: Bool] == ["dragenter": true, "dragover": true, "drop": true], "the page is the drop's target")
        let dropped = result["dropped"] as? [String: String] ?? [:]
        #expect(dropped["desk note.txt"] == "Uploaded as desk note.txt" && dropped["desk big.bin"] == "Uploaded as desk big.bin", "\(dropped)")
        // A refusal is the portal's own sentence.
        #expect(dropped[".."]?.hasPrefix("A file's name may not be empty") == true, "\(dropped)")
        #expect(result["dropHintAfter"] as? Bool == false, "the hint stays after the drop")
        #expect((result["dropAskedAbout"] as? String)?.contains("exists: keep both, or replace it") == true, "\(result["dropAskedAbout"] ?? "")")
        #expect(result["dropAskButtons"] as? [String] == ["Keep both", "Replace", "Cancel"], "\(result["dropAskButtons"] ?? "")")
        #expect(result["dropReplaced"] as? String == "Uploaded as desk note.txt", "\(result["dropReplaced"] ?? "")")
        #expect((result["axeDrop"] as? [Any])?.isEmpty == true, "axe on the drop overlay: \(result["axeDrop"] ?? "not run")")
        for (name, digest) in result["dropExpected"] as? [String: String] ?? [:] {
            let sum = try CommandResult.run("/usr/bin/sha256sum", [downloads + "/" + name])
            #expect(sum.stdout.hasPrefix(digest + " "), "\(name) did not arrive whole from the desktop's page: \(sum.stdout)\(sum.stderr)")
            var made = stat()
            #expect(stat(downloads + "/" + name, &made) == 0 && made.st_uid == owner.uid, "\(name) is not the owner's")
        }
        #expect((result["dropExpected"] as? [String: String])?.count == 2)
        #expect(!FileManager.default.fileExists(atPath: downloads + "/not-mine.txt"))
        // Nobody else's page offers a drop, and none navigates away to a file dropped on it.
        let refused = result["dropRefused"] as? [String: [String: Any]] ?? [:]
        #expect(refused.keys.sorted() == ["ownViewOnly", "stranger", "viewOnly"], "\(refused)")
        for (page, state) in refused {
            #expect(state["offer"] as? String == "off" && state["hint"] as? Bool == false && state["overlay"] as? Bool == false, "\(page): \(state)")
            #expect((state["cancelled"] as? [String: Bool])?["drop"] == true, "\(page): a dropped file would open in the tab")
        }

        // The desktop's own shell sees them: typed into its xterm through the gateway.
        let link = try BrowserGatewayTests.link(daemon, session.display, as: owner.name)
        let typed = try BrowserHarness.open(link.url, type: "ls \(downloads) > \(seen)", viewport: "640x480")
        #expect(eventually(10) { ((try? String(contentsOfFile: seen, encoding: .utf8)) ?? "").contains("big.bin") }, "the desktop's shell did not list the uploads: \(typed.outcome.summary)")
        let listed = (try? String(contentsOfFile: seen, encoding: .utf8)) ?? ""
        #expect(listed.contains("notes one.txt") && listed.contains("photo.bin") && listed.contains("notes one (1).txt"), "\(listed)")
    }
}
}
