import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Synchronization
import Testing

/// Passwords: rotated without a restart, shown only to the owner and admins, never written
/// to a log, the audit trail or an argument list. And the audit trail itself.
extension EndToEnd {
@Suite struct SecretsAndAuditTests {
    static func logsIn(_ session: Session, _ password: String) -> Bool {
        guard let viewer = try? VNCConnection(session.endpoint, password: password) else { return false }
        viewer.close()
        return true
    }

    @Test func passwordsRotateWithoutARestartAndOnlyForTheOwnerOrAnAdmin() throws {
        let judy = try TestUsers.ensure("deskt-judy")
        let ken = try TestUsers.ensure("deskt-ken")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(judy); TestUsers.reap(ken) }
        let session = try daemon.start(judy.name, as: judy.name)
        let first = try #require(session.password)
        #expect(Self.logsIn(session, first))
        // A viewer connected before the rotation stays connected.
        let viewer = try VNCConnection(session.endpoint, password: first)
        defer { viewer.close() }

        // Judy rotates her own password: the old one stops working, the new one works, same Xvnc.
        let rotated = try daemon.deskctl(["passwd", session.display.description, "--json"], as: judy.name).decode(Session.self)
        let second = try #require(rotated.password)
        #expect(second != first && rotated.pid == session.pid && ProcFS.isAlive(session.pid))
        #expect(!Self.logsIn(session, first))
        #expect(Self.logsIn(session, second))
        #expect(viewer.refresh() != nil)

        // A view-only password is added beside the full one.
        let viewOnly = try daemon.deskctl(["passwd", session.display.description, "--view-only", "--json"], as: judy.name).decode(Session.self)
        let watchOnly = try #require(viewOnly.viewOnlyPassword)
        #expect(viewOnly.password == nil)
        #expect(Self.logsIn(session, watchOnly))
        #expect(Self.logsIn(session, second))
        let passwordFile = daemon.runtimeDirectory + "/displays/\(session.display.number)/passwd"
        var info = stat()
        #expect(stat(passwordFile, &info) == 0 && info.st_uid == judy.uid && info.st_mode & 0o777 == 0o600 && info.st_size == 16)

        // Ken may not rotate Judy's password: refused, and her password still works.
        let refused = try daemon.deskctl(["passwd", session.display.description], as: ken.name)
        #expect(refused.status == 1)
        #expect(refused.stderr == "deskctl: display \(session.display) belongs to another user; only its owner or an admin may change the password of it.\n")
        #expect(Self.logsIn(session, second))
        // An admin may; the human form prints the new password.
        let byRoot = try daemon.deskctl(["passwd", session.display.description])
        #expect(byRoot.status == 0 && byRoot.stdout.hasPrefix("New password for \(session.display) (\(judy.name)): "))
        #expect(ProcFS.isAlive(session.pid))
    }

    @Test func noPasswordAppearsInLogsTheAuditTrailArgumentsOrOtherUsersViews() throws {
        let judy = try TestUsers.ensure("deskt-judy")
        let ken = try TestUsers.ensure("deskt-ken")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(judy); TestUsers.reap(ken) }

        // A whole lifecycle, with every command that handles a password.
        let session = try daemon.start(judy.name, as: judy.name)
        var passwords = [try #require(session.password)]
        passwords.append(try #require(try daemon.deskctl(["passwd", session.display.description, "--json"], as: judy.name).decode(Session.self).password))
        passwords.append(try #require(try daemon.deskctl(["passwd", session.display.description, "--view-only", "--json"]).decode(Session.self).viewOnlyPassword))
        #expect(try daemon.deskctl(["probe", session.display.description], as: judy.name).status == 0)

        // What others see carries no password: Ken's list, an admin's list and show.
        let views = [
            try daemon.deskctl(["list", "--all", "--json"], as: ken.name).stdout,
            try daemon.deskctl(["list", "--all", "--json"]).stdout,
            try daemon.deskctl(["show", session.display.description, "--json"]).stdout,
            try daemon.deskctl(["show", session.display.description, "--json"], as: judy.name).stdout,
            try daemon.deskctl(["history", "--json"]).stdout,
        ]
        #expect(try JSONDecoder.desk.decode(SessionList.self, from: Data(views[0].utf8)).sessions.isEmpty)
        // Nor does any process's argument list.
        let desktopPid = try #require(daemon.desktopPid(of: session))
        let commandLines = [session.pid, desktopPid].map { pid in
            String(decoding: ProcFS.read("/proc/\(pid)/cmdline") ?? [], as: UTF8.self)
        }
        #expect(commandLines[0].contains("-rfbauth"))
        #expect(try daemon.deskctl(["kill", session.display.description], as: judy.name).status == 0)

        let audit = daemon.auditText
        #expect(audit.split(separator: "\n").count == 5)   // start, passwd, passwd --view-only, ended, kill
        for password in passwords {
            #expect(!daemon.logText.contains(password), "the daemon's log holds a password")
            #expect(!audit.contains(password), "the audit trail holds a password")
            for text in views + commandLines { #expect(!text.contains(password)) }
        }
    }

    @Test func theAuditTrailRecordsWhoDidWhatToWhomAndHistoryShowsEachTheirOwn() throws {
        let judy = try TestUsers.ensure("deskt-judy")
        let ken = try TestUsers.ensure("deskt-ken")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(judy); TestUsers.reap(ken) }

        let judys = try daemon.start(judy.name, as: judy.name)
        let kens = try daemon.start(ken.name)                       // root starts Ken's
        #expect(try daemon.deskctl(["kill", judys.display.description], as: ken.name).status == 1)  // refused, and audited
        #expect(try daemon.deskctl(["reap", "--idle", "1d"], as: ken.name).status == 0)
        #expect(try daemon.deskctl(["kill", "--user", ken.name]).status == 0)
        #expect(try daemon.deskctl(["list"], as: judy.name).status == 0)   // not a state change: not audited

        let lines = daemon.auditText.split(separator: "\n")
        let entries = try lines.map { try JSONDecoder.desk.decode(AuditEntry.self, from: Data($0.utf8)) }
        // deskd notes the end of Ken's session as it happens, inside the kill it then records.
        #expect(entries.map(\.command) == [.start, .start, .kill, .reap, .ended, .kill])
        #expect(entries[0].peerUID == judy.uid && entries[0].user == judy.name && entries[0].display == judys.display && entries[0].ok)
        #expect(entries[0].peerPID > 0 && entries[0].detail == "desktop=xterm geometry=1920x1080")
        #expect(entries[1].peerUID == 0 && entries[1].user == ken.name && entries[1].outcome == "started")
        #expect(entries[2].peerUID == ken.uid && entries[2].display == judys.display && !entries[2].ok && entries[2].outcome == "permission-denied")
        #expect(entries[4].peerUser == "deskd" && entries[4].uid == ken.uid && entries[4].detail == "session=\(kens.id)")
        #expect(entries[4].outcome.hasPrefix("killed by root (server "), "\(entries[4].outcome)")
        #expect(entries[5].outcome == "killed \(kens.display) (\(ken.name))")
        var info = stat()
        #expect(stat(daemon.auditPath, &info) == 0 && info.st_uid == 0 && info.st_mode & 0o777 == 0o600)

        // Judy sees her start and Ken's attempt on her session; Ken sees his own; root sees all.
        let judysView = try daemon.deskctl(["history", "--json"], as: judy.name).decode([AuditEntry].self)
        #expect(judysView.map(\.command) == [.start, .kill])
        let kensView = try daemon.deskctl(["history", "--json"], as: ken.name).decode([AuditEntry].self)
        #expect(kensView.map(\.command) == [.start, .kill, .reap, .ended, .kill])
        #expect(try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self).count == 6)
        #expect(try daemon.deskctl(["history", "--json", "--user", judy.name]).decode([AuditEntry].self).count == 2)
        #expect(try daemon.deskctl(["history", "--json", "--since", "2030-01-01"]).decode([AuditEntry].self).isEmpty)
        #expect(try daemon.deskctl(["history", "--json", "--since", "1h"]).decode([AuditEntry].self).count == 6)
        let nosy = try daemon.deskctl(["history", "--user", judy.name], as: ken.name)
        #expect(nosy.status == 1 && nosy.stderr.contains("only an admin may read another user's"))
        let table = try daemon.deskctl(["history"])
        #expect(table.stdout.hasPrefix("TIME ") && table.stdout.contains("permission-denied"))
        // Each time carries its zone, and a time history prints means the same instant to --since.
        let newYork = ["TZ=America/New_York", TestEnvironment.deskctl, "history", "--socket", daemon.socket]
        let zoned = try CommandResult.run("/usr/bin/env", newYork)
        let oldest = String(try #require(zoned.stdout.split(separator: "\n").dropFirst().first).prefix(25))
        #expect(oldest.hasSuffix(" -0500") || oldest.hasSuffix(" -0400"), "\(zoned.stdout)")
        #expect(try CommandResult.run("/usr/bin/env", newYork + ["--json", "--since", oldest]).decode([AuditEntry].self).count == 6)
    }

    /// A megabyte of history reaches the caller whole (a reply is flushed before its connection
    /// closes), and a user asking for it in a loop holds one read at a time.
    @Test func aLargeHistoryArrivesWholeAndOneReadAtATime() throws {
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown() }
        let padding = String(repeating: "p", count: 400)
        var text = ""
        for index in 0..<4000 {
            let entry = AuditEntry(time: Date(timeIntervalSinceNow: Double(index - 4000)), peerUID: 0, peerPID: 1, peerUser: "root",
                                   command: .kill, user: "deskt-nobody", detail: padding, ok: true, outcome: "killed :\(index % 99 + 1)")
            text += String(decoding: try JSONEncoder.desk.encode(entry), as: UTF8.self) + "\n"
        }
        let fd = open(daemon.auditPath, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        #expect(fd >= 0)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)

        let history = try daemon.deskctl(["history", "--json"])
        #expect(history.status == 0 && history.stdout.utf8.count > 800_000)
        let entries = try history.decode([AuditEntry].self)
        #expect(entries.count > 1000 && entries.count < 4000)
        #expect(entries.last?.outcome == "killed :\(3999 % 99 + 1)")

        // Twenty at once from one caller: each either answers whole or is told to wait, and the
        // daemon goes on serving.
        let socket = daemon.socket
        let replies = Mutex<[Response?]>([])
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            let reply = try? ControlClient(socketPath: socket).send(Request(command: .history))
            replies.withLock { $0.append(reply) }
        }
        let all = replies.withLock { $0 }
        #expect(all.allSatisfy { $0?.history?.count == entries.count || $0?.error?.code == .limitReached })
        #expect(all.contains { $0?.history?.count == entries.count })
        #expect(try daemon.deskctl(["status"]).status == 0)
    }
}
}
