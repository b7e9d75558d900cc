import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// Accounts that cannot log in get no desktop, and a sentence that says why and what to do:
/// the overflow account, a nologin shell, a home that is not there. Real accounts, real deskd.
extension EndToEnd {
@Suite struct LoginAccountTests {
    @Test func accountsThatCannotLogInAreRefusedWithASentence() throws {
        let sam = try TestUsers.ensure("deskt-sam")
        let daemon = try DaemonUnderTest()
        defer {
            _ = try? TestUsers.run("/usr/sbin/usermod", ["--shell", "/bin/sh", "--home", sam.home, sam.name])
            daemon.shutDown()
            TestUsers.reap(sam)
        }
        let nobody = try daemon.deskctl(["start", "--user", "nobody"])
        #expect(nobody.status == 1 && nobody.stderr.contains("nobody (uid 65534) is the overflow account"), "\(nobody.stderr)")

        try TestUsers.run("/usr/sbin/usermod", ["--shell", "/usr/sbin/nologin", sam.name])
        let nologin = try daemon.deskctl(["start", "--user", sam.name, "--json"])
        #expect(nologin.status == 1 && nologin.stdout.contains("\"user-not-allowed\"") && nologin.stdout.contains("their shell is /usr/sbin/nologin"),
                "\(nologin.stdout)")

        try TestUsers.run("/usr/sbin/usermod", ["--shell", "/bin/sh", "--home", sam.home + "-gone", sam.name])
        let homeless = try daemon.deskctl(["start", "--user", sam.name])
        #expect(homeless.status == 1 && homeless.stderr.contains("home directory \(sam.home)-gone does not exist"), "\(homeless.stderr)")

        // Nothing started for any of them, and the same account with its home back starts.
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)
        try TestUsers.run("/usr/sbin/usermod", ["--home", sam.home, sam.name])
        let session = try daemon.start(sam.name)
        #expect(session.state == .ready)
    }
}
}
