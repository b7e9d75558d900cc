import DeskCore
import Testing

@Suite struct AccessPolicyTests {
    let policy = AccessPolicy(minimumUID: 1000)
    let alice = Caller(uid: 1001, gid: 1001, pid: 10, userName: "alice", isAdmin: false)
    let admin = Caller(uid: 1500, gid: 1500, pid: 11, userName: "ops", isAdmin: true)

    @Test func usersActOnTheirOwnOnlyAndAdminsOnAll() {
        #expect(policy.mayAct(alice, onSessionOf: 1001))
        #expect(!policy.mayAct(alice, onSessionOf: 1002))
        #expect(policy.mayAct(admin, onSessionOf: 1002))
    }

    @Test func refusesRootAndSystemAccounts() {
        #expect(throws: DeskError.self) { try policy.checkDesktopAccount(name: "root", uid: 0) }
        #expect(throws: DeskError.self) { try policy.checkDesktopAccount(name: "www-data", uid: 33) }
        #expect(throws: Never.self) { try policy.checkDesktopAccount(name: "alice", uid: 1001) }
    }
}
