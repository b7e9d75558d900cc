@testable import DeskCore
import FoundationEssentials
import Glibc
import PropertyBased
import Testing

/// Time parsing and formatting. deskd writes times and durations that it, deskctl, a peer or
/// Slurm reads back: a form that does not read back as the same instant or the same seconds
/// moves a session's expiry, a reap's idle limit or a job's time limit. The text comes from
/// users, peers and squeue, so no string may trap the parser (deskd runs as root), and what it
/// accepts must be exactly the grammar it documents. Written times must also sort as they
/// happen, since logs and history are read (and compared) as text.
@Suite(.shrinking) struct TimeProperties {
    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the four-digit years the text forms have.
    static let firstSecond: Int64 = -62_167_219_200
    static let lastSecond: Int64 = 253_402_300_799
    static let instants = Gen.int64(in: firstSecond...lastSecond)

    static func date(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: Double(seconds)) }

    // MARK: Durations (IdleDuration; SessionTable.compactDuration writes them)

    static let units: [(Character, Int)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
    static let year = 365 * 86400

    /// N of any unit, upper or lower case, up to 400 days: read as N units up to 365 days, refused past.
    @Test func aNumberAndAUnitReadAsThatManySecondsUpToAYear() async {
        await propertyCheck(input: Gen.int(in: 0...(400 * 86400)), pick(Self.units), Gen.bool) { seconds, unit, upper in
            let count = seconds / unit.1
            let text = "\(count)" + (upper ? unit.0.uppercased() : String(unit.0))
            let parsed = outcome { () throws(DeskError) in try IdleDuration.seconds(parsing: text) }
            if count > 0, count * unit.1 <= Self.year {
                #expect(parsed.value == count * unit.1)
            } else {
                #expect(parsed.failure?.code == .invalidDuration)
            }
        }
    }

    /// The compact form deskctl prints (45s, 12m, 3h, 2d) reads back as the seconds it shows:
    /// exact when they are whole units of the largest that fits, less than one unit short else.
    @Test func aPrintedDurationReadsBackAsTheSecondsItShows() async throws {
        await propertyCheck(input: Gen.int(in: 1...Self.year)) { seconds in
            let unit = Self.units.last { $0.1 <= seconds }!.1
            let text = SessionTable.compactDuration(seconds: seconds)
            let parsed = try IdleDuration.seconds(parsing: text)
            #expect(parsed == seconds - seconds % unit, "\(text)")
        }
    }

    /// Anything near a duration: accepted exactly when it is ASCII digits and at most one unit
    /// letter, the number positive and at most a year in all.
    @Test func onlyDigitsAndOneUnitReadAsADuration() async {
        let tokens = ["0", "1", "5", "365", "8760", "31536000", "99999999999999999999", "s", "m", "h", "d", "D", "w",
                      " ", "-", "+", ".", "٢", "\u{212A}", "İ", "ſ"]
        await propertyCheck(count: 300, input: text(of: tokens, count: 0...4)) { text in
            let unit = text.last.flatMap { last in Self.units.first { String($0.0) == last.lowercased() }?.1 }
            let digits = unit == nil ? Substring(text) : text.dropLast()
            var expected: Int?
            if !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
               let count = Int(digits), count > 0, count <= Self.year / (unit ?? 1) {
                expected = count * (unit ?? 1)
            }
            #expect(outcome { () throws(DeskError) in try IdleDuration.seconds(parsing: text) }.value == expected)
        }
    }

    // MARK: Slurm time limits (SlurmTime)

    @Test func aSlurmTimesDescriptionReadsBackAsTheSameSeconds() async {
        await propertyCheck(input: Gen.int(in: 0...SlurmTime.maxSeconds)) { seconds in
            let text = SlurmTime(seconds: seconds).description
            #expect(SlurmTime(slurm: text)?.seconds == seconds, "\(text)")
        }
    }

    /// Each of sbatch's six forms, fields padded or not and past their clock range too (Slurm
    /// adds them up): the sum in seconds, up to a year; nil past it.
    @Test func everyFormOfASlurmTimeAddsUpItsFields() async {
        let fields = zip(Gen.int(in: 0...5), Gen.int(in: 0...600_000), Gen.int(in: 0...99), Gen.int(in: 0...99), Gen.int(in: 0...99), Gen.bool)
        await propertyCheck(input: fields) { form, lead, b, c, e, pad in
            func f(_ n: Int) -> String { pad && n < 10 ? "0\(n)" : "\(n)" }
            let days = lead % 400, hours = lead % 10_000
            let (text, seconds) = switch form {
            case 0: ("\(lead)", lead * 60)
            case 1: ("\(lead):\(f(b))", lead * 60 + b)
            case 2: ("\(hours):\(f(b)):\(f(c))", hours * 3600 + b * 60 + c)
            case 3: ("\(days)-\(f(b))", days * 86400 + b * 3600)
            case 4: ("\(days)-\(f(b)):\(f(c))", days * 86400 + b * 3600 + c * 60)
            default: ("\(days)-\(f(b)):\(f(c)):\(f(e))", days * 86400 + b * 3600 + c * 60 + e)
            }
            let parsed = SlurmTime(slurm: text)
            if seconds <= SlurmTime.maxSeconds {
                #expect(parsed?.seconds == seconds, "\(text)")
            } else {
                #expect(parsed == nil, "\(text)")
            }
        }
    }

    // MARK: Calendar arithmetic (CivilTime)

    /// The C library's gmtime_r, for every second of years 0000 to 9999: the same day and time,
    /// and the seconds back again.
    @Test func daysAndTimesAgreeWithTheCLibraryAndReadBack() async {
        await propertyCheck(input: Self.instants) { seconds in
            var t = time_t(seconds)
            var parts = tm()
            #expect(gmtime_r(&t, &parts) != nil)
            let civil = CivilTime(secondsSinceEpoch: seconds)
            #expect(civil == CivilTime(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                                       hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec)))
            #expect(civil.isValid)
            #expect(civil.secondsSinceEpoch == seconds)
        }
    }

    /// A date and time read back from its seconds exactly when it is valid (a 30 February, a
    /// 24:00 or a month 13 lands on another day). Leap seconds (:60) are left out: valid, but
    /// the next minute's :00.
    @Test func aCivilTimeIsValidExactlyWhenItsSecondsGiveItBack() async {
        let civil = zip(Gen.int(in: 0...9999), Gen.int(in: 0...13), Gen.int(in: 0...32), Gen.int(in: 0...24), Gen.int(in: 0...60), Gen.int(in: 0...59))
            .map { CivilTime(year: $0, month: $1, day: $2, hour: $3, minute: $4, second: $5) }
        await propertyCheck(count: 300, input: civil) { civil in
            #expect(civil.isValid == (CivilTime(secondsSinceEpoch: civil.secondsSinceEpoch) == civil))
        }
    }

    /// Times written in the ISO form (and deskctl's) sort as text in the order they happened.
    @Test func writtenTimesSortInTheOrderTheyHappened() async {
        await propertyCheck(input: Self.instants, Self.instants) { a, b in
            let (textA, textB) = (InternetTime.format(Self.date(a)), InternetTime.format(Self.date(b)))
            #expect((textA < textB) == (a < b) && (textA == textB) == (a == b), "\(textA) \(textB)")
            let (civilA, civilB) = (CivilTime(secondsSinceEpoch: a).text(), CivilTime(secondsSinceEpoch: b).text())
            #expect((civilA < civilB) == (a < b), "\(civilA) \(civilB)")
        }
    }

    // MARK: Written instants (InternetTime, WallClock, TimeText)

    /// Any instant of years 0000 to 9999, to the microsecond: written and read back, the same
    /// instant to the whole second (rounded down).
    @Test func anInstantWrittenReadsBackToTheSecond() async {
        await propertyCheck(input: Self.instants, Gen.int(in: 0...999_999)) { seconds, micros in
            let date = Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1e6)
            #expect(InternetTime.parse(InternetTime.format(date)) == Self.date(seconds), "\(InternetTime.format(date))")
        }
    }

    /// A clock of any fixed offset from -23:59 to +23:59: what it writes (`2026-11-23 10:04:05
    /// +0100`) it reads back as the same instant, and so its wall time with no zone at all.
    @Test func aClocksWrittenTimeReadsBackOnThatClock() async {
        let span = Self.firstSecond + 86400...Self.lastSecond - 86400
        await propertyCheck(input: Gen.int64(in: span), Gen.int(in: -1439...1439)) { seconds, minutes in
            let clock = WallClock { _ in UTCOffset(seconds: minutes * 60) }
            let date = Self.date(seconds)
            #expect(clock.parse(clock.format(date)) == date, "\(clock.format(date))")
            #expect(clock.parse(clock.civil(date).text()) == date, "\(clock.civil(date).text())")
        }
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// The zone of an ISO time as the parser documents it: Z, or +HH, +HHMM or +HH:MM (or -),
    /// hours to 23 and minutes to 59, after at most one space; its offset in seconds, or nil.
    static func offset(ofZone zone: Substring) -> Int? {
        let zone = zone.hasPrefix(" ") ? zone.dropFirst() : zone
        if zone == "Z" || zone == "z" { return 0 }
        let bytes = Array(zone.utf8)
        guard let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") else { return nil }
        let rest = Array(bytes.dropFirst())
        func two(_ at: Int) -> Int? {
            guard at + 2 <= rest.count, rest[at..<at + 2].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            return Int(rest[at] - UInt8(ascii: "0")) * 10 + Int(rest[at + 1] - UInt8(ascii: "0"))
        }
        let hm: (Int?, Int?) = switch rest.count {
        case 2: (two(0), 0)
        case 4: (two(0), two(2))
        case 5 where rest[2] == UInt8(ascii: ":"): (two(0), two(3))
        default: (nil, nil)
        }
        guard let hours = hm.0, let minutes = hm.1, hours <= 23, minutes <= 59 else { return nil }
        return (first == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60)
    }

    /// An ISO time with every variation of its separator, seconds and zone the grammar has, and
    /// some it does not (a zone after a Z, hours 24, minutes 60, an underscore): read exactly
    /// when it follows the grammar, as the instant it names.
    @Test func anISOTimeIsReadExactlyWhenItFollowsTheGrammar() async {
        let wellFormed = zip(pick(["Z", "z", "+", "-"]), Gen.int(in: 0...23), pick(["", ":"]), Gen.int(in: 0...59).optional)
            .map { sign, hours, colon, minutes in sign == "Z" || sign == "z" ? sign : sign + Self.two(hours) + (minutes.map { colon + Self.two($0) } ?? "") }
        let nearlyWellFormed = zip(pick(["", "", "Z", "z", " "]), pick(["", "+", "-"]), pick(["", "00", "01", "05", "23", "24", "1"]),
                                   pick(["", ":"]), pick(["", "00", "30", "59", "60", "5"]), pick(["", "", "", "Z", " ", ":"]))
            .map { [$0, $1, $2, $3, $4, $5].joined() }
        let zone = Gen.oneOf(wellFormed, nearlyWellFormed)
        let shape = zip(pick(["T", "t", " ", "_"]), pick(["", ".5", ",25", ".123456789"]), Gen.bool)
        var read = 0
        await propertyCheck(count: 500, input: Self.instants, shape, zone) { seconds, shape, zone in
            let (separator, fraction, space) = shape
            let civil = CivilTime(secondsSinceEpoch: seconds)
            let text = civil.text(separator: separator) + fraction + (space ? " " : "") + zone
            // A fraction takes every digit after it; the zone is what follows.
            let suffix = (space ? " " : "") + zone
            let afterFraction = fraction.isEmpty || space ? Substring(suffix) : suffix.drop { $0.isASCII && $0.isNumber }
            let expected = separator == "_" ? nil : Self.offset(ofZone: afterFraction).map { Self.date(seconds - Int64($0)) }
            #expect(InternetTime.parse(text) == expected, "\(text)")
            if expected != nil { read += 1 }
        }
        #expect(read >= 100, "too few well-formed times to say much")
    }

    /// Regression (found by the property above, shrunk): a zone after Z was read as that zone,
    /// so this was 1970-01-01T00:00:00 at +00 and "…Z+05:00" five hours off the Z it says.
    @Test func aZoneAfterZIsNoTime() {
        #expect(InternetTime.parse("1970-01-01T00:00:00Z+00") == nil)
        #expect(InternetTime.parse("2026-11-22T07:31:02Z+05:00") == nil)
        #expect(WallClock.utc.parse("2026-11-22 07:31:02 z-01") == nil)
        #expect(InternetTime.parse("2026-11-22T07:31:02Z") == Date(timeIntervalSince1970: 1_795_332_662))
    }

    /// Text made of the pieces of every time form deskd reads: no parser traps on it, and what
    /// each accepts it gives back in its own form, read again as the same.
    @Test func noTimeTextTrapsAParserAndWhatIsReadWritesBackTheSame() async {
        let tokens = ["2026", "0000", "9999", "-", "02", "29", "30", "12", "13", "T", " ", ":", "00", "23", "59", "60", "61", ".", ",",
                      "5", "Z", "+", "24", "1", "d", "h", "m", "s", "UNLIMITED", "99999999999999999999", "٣", "\u{0}"]
        let texts = Gen.oneOf(text(of: tokens, count: 0...12), Gen.latin1.string(of: 0...24))
        await propertyCheck(count: 500, input: texts) { text in
            if let date = InternetTime.parse(text) {
                #expect(InternetTime.parse(InternetTime.format(date)) == date, "\(InternetTime.format(date))")
            }
            if let date = WallClock.utc.parse(text) {
                #expect(WallClock.utc.parse(WallClock.utc.format(date)) == date)
            }
            if let time = SlurmTime(slurm: text) {
                #expect(time.seconds.map { (0...SlurmTime.maxSeconds).contains($0) } ?? true)
                #expect(SlurmTime(slurm: time.description) == time, "\(time)")
            }
            if let seconds = try? IdleDuration.seconds(parsing: text) {
                #expect((1...Self.year).contains(seconds))
            }
        }
    }
}
