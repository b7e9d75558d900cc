import DeskCore
import Testing

@Suite struct DisplayAllocatorTests {
    let allocator = DisplayAllocator(range: 1...5)

    @Test func picksTheLowestFreeDisplay() throws {
        let busy: [Int: DisplayOccupancy] = [1: .heldByDeskd, 2: .liveLock(pid: 40), 3: .tcpPortBound(5903)]
        #expect(try allocator.choose(requested: nil) { busy[$0.number] ?? .free } == Display(4))
    }

    @Test func reclaimsAStaleLockBeforeAHigherFreeDisplay() throws {
        let busy: [Int: DisplayOccupancy] = [1: .liveLock(pid: 9), 2: .staleLock(pid: 123)]
        #expect(try allocator.choose(requested: nil) { busy[$0.number] ?? .free } == Display(2))
    }

    @Test(arguments: [DisplayOccupancy.heldByDeskd, .liveLock(pid: 7), .xSocketListening, .tcpPortBound(6001)])
    func treatsEveryKindOfOccupancyAsBusy(state: DisplayOccupancy) throws {
        #expect(try allocator.choose(requested: nil) { $0.number == 1 ? state : .free } == Display(2))
    }

    @Test func skipsDisplaysAlreadyTried() throws {
        #expect(try allocator.choose(requested: nil, skipping: [Display(1), Display(2)]) { _ in .free } == Display(3))
    }

    @Test func honoursAnExplicitFreeDisplay() throws {
        #expect(try allocator.choose(requested: Display(5)) { _ in .free } == Display(5))
    }

    @Test func refusesABusyExplicitDisplayWithTheReason() {
        let error = #expect(throws: DeskError.self) {
            try allocator.choose(requested: Display(3)) { _ in .liveLock(pid: 812) }
        }
        #expect(error?.code == .displayBusy)
        #expect(error?.message.contains("pid 812") == true)
    }

    @Test func refusesAnExplicitDisplayOutOfRange() {
        #expect(throws: DeskError(.invalidDisplay, "display :9 is out of range; use :1 to :5.")) {
            try allocator.choose(requested: Display(9)) { _ in .free }
        }
    }

    @Test func saysSoWhenEveryDisplayIsTaken() {
        let error = #expect(throws: DeskError.self) { try allocator.choose(requested: nil) { _ in .heldByDeskd } }
        #expect(error?.code == .noFreeDisplay)
    }
}

@Suite struct ValueParsingTests {
    @Test(arguments: [":3", "3", ":99"])
    func parsesDisplays(text: String) throws {
        #expect(try Display(parsing: text).number == Int(text.filter(\.isNumber)))
    }

    @Test(arguments: ["", ":", ":0", ":100", "abc", ":-1", ":3.0", ":٣"])
    func refusesBadDisplays(text: String) {
        #expect(throws: DeskError.self) { try Display(parsing: text) }
    }

    @Test func displayPorts() {
        #expect(Display(7).rfbPort == 5907)
        #expect(Display(7).x11Port == 6007)
        #expect(Display(7).lockPath == "/tmp/.X7-lock")
    }

    @Test(arguments: ["1920x1080", "320x200", "8192x8192"])
    func parsesGeometries(text: String) throws {
        #expect(try Geometry(parsing: text).description == text)
    }

    @Test(arguments: ["1920", "1920x", "x1080", "1920x1080x2", "100x100", "9000x1000", "-1x5", "1920X1080", "ab x cd"])
    func refusesBadGeometries(text: String) {
        let error = #expect(throws: DeskError.self) { try Geometry(parsing: text) }
        #expect(error?.code == .invalidGeometry)
    }

    @Test func depths() throws {
        #expect(try ColorDepth.validate(24) == 24)
        #expect(throws: DeskError.self) { try ColorDepth.validate(8) }
    }
}

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
