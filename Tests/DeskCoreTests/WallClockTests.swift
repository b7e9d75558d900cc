import DeskCore
import FoundationEssentials
import Glibc
import Testing

/// Central European time in 2026 as a rule of the test's own: CET (+0100), and CEST (+0200)
/// from 29 March 01:00 UTC to 25 October 01:00 UTC. The offset depends on the instant.
private let berlin = WallClock { date in
    let seconds = date.timeIntervalSince1970
    return seconds >= 1_774_746_000 && seconds < 1_792_890_000
        ? UTCOffset(seconds: 7200, abbreviation: "CEST") : UTCOffset(seconds: 3600, abbreviation: "CET")
}

private func at(_ seconds: Int) -> Date { Date(timeIntervalSince1970: Double(seconds)) }

@Suite struct CivilTimeTests {
    @Test("days and times from seconds agree with the C library's gmtime_r, before and after 1970")
    func agreesWithGmtime() {
        var seconds: Int64 = -2_208_988_800  // 1900-01-01
        while seconds < 4_102_444_800 {  // 2100-01-01
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            let civil = CivilTime(secondsSinceEpoch: seconds)
            #expect(civil == CivilTime(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                                       hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec)))
            #expect(civil.secondsSinceEpoch == seconds)
            seconds += 7_777_777  // about 90 days and an odd time of day
        }
        #expect(CivilTime(secondsSinceEpoch: -1).text() == "1969-12-31 23:59:59")
        #expect(CivilTime(secondsSinceEpoch: 951_782_400).text(separator: "T") == "2000-02-29T00:00:00")
    }

    @Test("only days that exist are valid", arguments: [
        (CivilTime(year: 2024, month: 2, day: 29), true), (CivilTime(year: 2026, month: 2, day: 29), false),
        (CivilTime(year: 2000, month: 2, day: 29), true), (CivilTime(year: 1900, month: 2, day: 29), false),
        (CivilTime(year: 2026, month: 4, day: 31), false), (CivilTime(year: 2026, month: 13, day: 1), false),
        (CivilTime(year: 2026, month: 1, day: 1, hour: 24), false),
    ])
    func validity(civil: CivilTime, valid: Bool) {
        #expect(civil.isValid == valid)
    }
}

@Suite struct WallClockTests {
    @Test("each time shows the offset of its own instant, across a change of daylight saving")
    func formatPerInstant() {
        #expect(berlin.format(at(1_768_467_600)) == "2026-01-15 10:00:00 +0100")
        #expect(berlin.format(at(1_784_106_000)) == "2026-07-15 11:00:00 +0200")
        // The last second of summer time and the first of winter time: one second apart, the clock an hour back.
        #expect(berlin.format(at(1_792_889_999)) == "2026-10-25 02:59:59 +0200")
        #expect(berlin.format(at(1_792_890_000)) == "2026-10-25 02:00:00 +0100")
        #expect(berlin.formatNamed(at(1_792_890_000)) == "2026-10-25 02:00:00 CET")
        #expect(WallClock.utc.format(at(0)) == "1970-01-01 00:00:00 +0000")
        let india = WallClock { _ in UTCOffset(seconds: 19800) }
        #expect(india.formatNamed(at(0)) == "1970-01-01 05:30:00 +0530")
        #expect(WallClock { _ in UTCOffset(seconds: -12600) }.format(at(0)) == "1969-12-31 20:30:00 -0330")
    }

    @Test("history with a winter and a summer entry shows two offsets")
    func historyAcrossDST() {
        let entries = [1_768_467_600, 1_784_106_000].map {
            AuditEntry(time: at($0), peerUID: 0, peerPID: 1, peerUser: "root", command: .start, user: "alice", uid: 1000,
                       display: Display(3), ok: true, outcome: "started")
        }
        let lines = HistoryTable.render(entries, clock: berlin).split(separator: "\n")
        #expect(lines[1].hasPrefix("2026-01-15 10:00:00 +0100  root"))
        #expect(lines[2].hasPrefix("2026-07-15 11:00:00 +0200  root"))
    }

    @Test("a bare date or time is the clock's own, in the offset of that day")
    func bareTimesAreLocal() {
        #expect(berlin.parse("2026-01-15") == at(1_768_431_600))  // 2026-01-14T23:00:00Z
        #expect(berlin.parse("2026-01-15 10:00") == at(1_768_467_600))
        #expect(berlin.parse("2026-07-15T11:00:00") == at(1_784_106_000))
        #expect(berlin.parse("2026-07-15 11:00:00") == at(1_784_106_000))
    }

    @Test("a written zone is honoured, whatever the clock")
    func writtenZones() {
        #expect(berlin.parse("2026-07-15T09:00:00Z") == at(1_784_106_000))
        #expect(berlin.parse("2026-07-15T10:00:00+01:00") == at(1_784_106_000))
        #expect(berlin.parse("2026-07-15 10:00:00 +0100") == at(1_784_106_000))
        #expect(berlin.parse("2026-07-15T04:00-05") == at(1_784_106_000))
        #expect(WallClock.utc.parse("2026-07-15 11:00 +0200") == at(1_784_106_000))
    }

    @Test("what history prints reads back as the same instant, in summer, in winter and in the repeated hour")
    func roundTrip() {
        for seconds in [1_768_467_600, 1_784_106_000, 1_792_888_200, 1_792_890_000 + 1800, 1_774_746_000] {
            #expect(berlin.parse(berlin.format(at(seconds))) == at(seconds))
        }
    }

    @Test("the hour shown twice means its first time; the hour skipped means the time the clock would have shown")
    func transitions() {
        // 25 October: 02:30 is shown at 00:30Z (CEST) and again at 01:30Z (CET).
        #expect(berlin.parse("2026-10-25 02:30") == at(1_792_888_200))
        // 29 March: clocks jump from 02:00 to 03:00; 02:30 reads as 01:30Z, which the clock shows as 03:30.
        #expect(berlin.parse("2026-03-29 02:30") == at(1_774_747_800))
        #expect(berlin.format(at(1_774_747_800)) == "2026-03-29 03:30:00 +0200")
    }

    @Test("what is not a time is refused", arguments: [
        "yesterday", "2026-02-30", "2026-11-22 25:00", "2026-11-22T14:30:00+2500", "2026-11-22x", "2026-11-22 14",
        "2026-11-22T14:30:00Z junk", "26-11-22", "2026-11-22T", "2026-11-22 14:30:00 +01:3",
    ])
    func refused(text: String) {
        #expect(berlin.parse(text) == nil)
        #expect(InternetTime.parse(text) == nil)
    }

    @Test("--since reads a local time through the clock it is given")
    func since() throws {
        let now = at(1_800_000_000)
        #expect(try PointInTime.parse("2026-07-15 11:00", now: now, clock: berlin) == at(1_784_106_000))
        #expect(try PointInTime.parse("1d", now: now, clock: berlin) == at(1_800_000_000 - 86400))
        let error = #expect(throws: DeskError.self) { try PointInTime.parse("noon", now: now, clock: berlin) }
        #expect(error?.message.contains("2026-11-22 14:30 (local time)") == true)
    }

    @Test("JSON times need a time and a zone; fractions are read and dropped")
    func internetTime() {
        #expect(InternetTime.parse("2026-11-22T01:01:02.75Z") == at(1_795_309_262))
        #expect(InternetTime.parse("2026-11-22T01:01:02") == nil)
        #expect(InternetTime.parse("2026-11-22") == nil)
        #expect(InternetTime.format(at(-1)) == "1969-12-31T23:59:59Z")
    }
}
