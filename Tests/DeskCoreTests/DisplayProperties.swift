import DeskCore
import FoundationEssentials
import PropertyBased
import Testing

// Property-based tests (issue 31): each property is checked on 100 generated inputs (a few
// cheap ones on more), from a fresh random seed each run. A failing input is shrunk to a small
// one, and the message names the seed: `.fixedSeed("…")` on the @Test replays it. These files are DisplayProperties.swift,
// AdmissionProperties.swift and TimeProperties.swift; what they share is here.

/// One of `items`, picked by index, so a failing case shrinks toward the first of them.
func pick<T: Sendable>(_ items: [T]) -> Generator<T, Shrink.Integer<Int>> {
    Gen.int(in: 0...(items.count - 1)).map { items[$0] }
}

/// Strings made of `tokens`: the pieces a parser cares about and a few it must refuse, so that
/// random text is often close to valid (random bytes almost never are). Shrinks to fewer tokens.
func text(of tokens: [String], count: ClosedRange<Int>) -> Generator<String, some Sequence & SendableMetatype> {
    pick(tokens).array(of: count).map { $0.joined() }
}

/// What a call that throws DeskError gave: its value or the error.
func outcome<T>(_ body: () throws(DeskError) -> T) -> Result<T, DeskError> {
    do { return .success(try body()) } catch { return .failure(error) }
}

extension Result {
    var value: Success? { if case .success(let value) = self { value } else { nil } }
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}

/// Display ranges and allocation. A start lands on the display the allocator picks, and two
/// desktops on one display (or one on a display another X server holds) is the worst thing a
/// start can do; a display out of the configured range is one deskd was told to leave alone.
/// So: never a taken, tried or out-of-range display; always the lowest free one; "none free"
/// exactly when none is; and the written form of a display reads back as the same display.
@Suite(.shrinking) struct DisplayProperties {
    /// Every kind of occupancy, free and stale (usable) among them, so about 40% are usable.
    static let states: [DisplayOccupancy] = [
        .free, .staleLock(pid: 4242), .heldByDeskd, .liveLock(pid: 812), .xSocketListening,
        .tcpPortBound(5907), .unusableLock("is a FIFO"), .free, .staleLock(pid: nil), .heldByDeskd,
    ]

    /// A host as the allocator sees it: its range, what occupies each display of it, and the
    /// displays this start already tried (a start that failed on one moves on to the next).
    struct Host: Sendable, CustomStringConvertible {
        let range: ClosedRange<Int>
        let states: [DisplayOccupancy]
        let tried: Set<Display>

        init(lowest: Int, displays: [(DisplayOccupancy, Bool)]) {
            range = lowest...(lowest + displays.count - 1)
            states = displays.map(\.0)
            tried = Set(displays.indices.filter { displays[$0].1 }.map { Display(lowest + $0) })
        }

        func occupancy(_ display: Display) -> DisplayOccupancy? {
            range.contains(display.number) ? states[display.number - range.lowerBound] : nil
        }

        /// What a correct allocator may hand out, lowest first.
        var usable: [Display] {
            range.map(Display.init).filter { occupancy($0)!.isUsable && !tried.contains($0) }
        }

        var description: String {
            ":\(range.lowerBound)...:\(range.upperBound) " + range.map { n in
                "\(n)=\(states[n - range.lowerBound])\(tried.contains(Display(n)) ? "(tried)" : "")"
            }.joined(separator: " ")
        }
    }

    static let hosts = zip(Gen.int(in: 1...40), zip(pick(states), Gen.bool(0.15)).array(of: 1...24))
        .map { Host(lowest: $0, displays: $1) }

    /// Asks `host` on the allocator's behalf, noting any display asked about outside its range.
    final class Prober: @unchecked Sendable {
        let host: Host
        var outside: [Display] = []
        init(_ host: Host) { self.host = host }
        func occupancy(_ display: Display) -> DisplayOccupancy {
            guard let state = host.occupancy(display) else {
                outside.append(display)
                return .free
            }
            return state
        }
    }

    @Test func anUnnamedStartGetsTheLowestUsableDisplayAndNoneExactlyWhenNoneIsFree() async {
        var noneFree = 0
        await propertyCheck(input: Self.hosts) { host in
            let prober = Prober(host)
            let chosen = outcome { () throws(DeskError) in
                try DisplayAllocator(range: host.range).choose(requested: nil, skipping: host.tried, occupancy: prober.occupancy)
            }
            if let lowest = host.usable.first {
                #expect(chosen.value == lowest)
            } else {
                #expect(chosen.failure?.code == .noFreeDisplay)
                noneFree += 1
            }
            #expect(prober.outside.isEmpty, "asked about displays outside its range")
        }
        #expect(noneFree >= 1, "never a host without a free display")
    }

    @Test func aNamedDisplayIsGivenExactlyWhenItIsInRangeUsableAndUntried() async {
        await propertyCheck(input: Self.hosts, Gen.int(in: -2...70)) { host, number in
            let requested = Display(number)
            let prober = Prober(host)
            let chosen = outcome { () throws(DeskError) in
                try DisplayAllocator(range: host.range).choose(requested: requested, skipping: host.tried, occupancy: prober.occupancy)
            }
            if !host.range.contains(number) {
                #expect(chosen.failure?.code == .invalidDisplay)
            } else if host.usable.contains(requested) {
                #expect(chosen.value == requested)
            } else {
                #expect(chosen.failure?.code == .displayBusy)
            }
            #expect(prober.outside.isEmpty, "asked about displays outside its range")
        }
    }

    /// Start after start on one host, each holding what it got: every usable display once, in
    /// order, never a taken one, and then "no free display".
    @Test func startAfterStartFillsEachFreeDisplayOnceLowestFirst() async {
        await propertyCheck(input: Self.hosts) { host in
            var held: Set<Display> = []
            var given: [Display] = []
            let allocator = DisplayAllocator(range: host.range)
            while given.count <= host.range.count {
                let next = outcome { () throws(DeskError) in
                    try allocator.choose(requested: nil, skipping: host.tried) { held.contains($0) ? .heldByDeskd : host.occupancy($0) ?? .heldByDeskd }
                }
                guard let display = next.value else {
                    #expect(next.failure?.code == .noFreeDisplay)
                    break
                }
                #expect(host.range.contains(display.number) && !held.contains(display))
                held.insert(display)
                given.append(display)
            }
            #expect(given == host.usable)
        }
    }

    @Test func aDisplaysWrittenFormReadsBackAsItself() async throws {
        await propertyCheck(input: Gen.int(in: Display.supportedRange)) { number in
            let display = Display(number)
            #expect(display.description == ":\(number)")
            #expect(try Display(parsing: display.description) == display)
            #expect(try Display(parsing: String(number)) == display)
            let json = try JSONEncoder().encode(display)
            #expect(try JSONDecoder().decode(Display.self, from: json) == display)
            #expect(try display.checked() == display)
        }
    }

    /// Any number, in any range: taken exactly when the range holds it, whether it comes as a
    /// number on the wire or as text.
    @Test func aDisplayIsRefusedExactlyWhenOutsideItsRange() async {
        let numbers = Gen.oneOf(Gen.int(in: -5...2100), Gen.int())
        await propertyCheck(input: numbers, Gen.int(in: 1...2000), Gen.int(in: 0...100)) { number, lowest, width in
            let range = lowest...(lowest + width)
            let checked = outcome { () throws(DeskError) in try Display(checking: number, range: range) }
            let parsed = outcome { () throws(DeskError) in try Display(parsing: ":\(number)", range: range) }
            if range.contains(number) {
                #expect(checked.value == Display(number) && parsed.value == Display(number))
            } else {
                #expect(checked.failure?.code == .invalidDisplay && parsed.failure?.code == .invalidDisplay)
            }
        }
    }

    /// Text near a display (":12", "12", but also "+3", ": 4", "٣", "1x"): taken exactly when it
    /// is ":N" or "N" in ASCII digits with N in range, and never a trap.
    @Test func onlyColonDigitsOrDigitsParseAsADisplay() async {
        let tokens = [":", "0", "1", "2", "7", "9", "+", "-", " ", "x", "٣", "\u{0}", "99999999999999999999"]
        await propertyCheck(count: 1000, input: text(of: tokens, count: 0...6)) { text in
            let digits = text.hasPrefix(":") ? text.dropFirst() : Substring(text)
            let wellFormed = !digits.isEmpty && digits.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            let expected = wellFormed ? Int(digits).flatMap { Display.supportedRange.contains($0) ? Display($0) : nil } : nil
            let parsed = outcome { () throws(DeskError) in try Display(parsing: text) }
            #expect(parsed.value == expected)
            if expected == nil { #expect(parsed.failure?.code == .invalidDisplay) }
        }
    }

    /// Regression (found by the property above, shrunk): Int() takes a sign, so "+1" and ":+1"
    /// were display :1.
    @Test func aSignedNumberIsNoDisplay() throws {
        for text in ["+1", ":+1", "-0", ":-1"] {
            #expect(throws: DeskError.self, "\(text)") { try Display(parsing: text) }
        }
        #expect(try Display(parsing: ":1") == Display(1))
    }
}
