import DeskCore
import FoundationEssentials
import Glibc

extension WallClock {
    /// This host's local time (TZ, else /etc/localtime) from the C library: `localtime_r` says the
    /// offset and the zone's name in force at each instant, so no zone database of ICU's is needed.
    /// deskctl prints and reads times with it; deskd reads squeue's start times (`SqueueRow`).
    public static let local: WallClock = {
        // localtime_r need not read TZ itself (POSIX); tzset makes sure it has, once.
        tzset()
        return WallClock { date in
            var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            guard localtime_r(&seconds, &parts) != nil else { return UTCOffset(seconds: 0, abbreviation: "UTC") }
            return UTCOffset(seconds: parts.tm_gmtoff, abbreviation: parts.tm_zone.map { String(cString: $0) })
        }
    }()
}
