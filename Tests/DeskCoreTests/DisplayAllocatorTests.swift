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
