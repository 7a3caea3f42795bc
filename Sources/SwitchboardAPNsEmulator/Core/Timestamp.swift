import Glibc

/// Wall-clock time for what the emulator reports (JWT age, 410 timestamps, `receivedAt`),
/// injected so tests can pin it.
///
/// ```swift
/// var configuration = APNsEmulatorConfiguration()
/// configuration.clock = APNsEmulatorClock { 1_700_000_000_000 }   // a fixed instant
/// ```
public struct APNsEmulatorClock: Sendable {
    /// Milliseconds since the UNIX epoch.
    public let nowMilliseconds: @Sendable () -> Int64

    /// A clock that answers `nowMilliseconds()`.
    public init(nowMilliseconds: @escaping @Sendable () -> Int64) {
        self.nowMilliseconds = nowMilliseconds
    }

    /// The system's real-time clock.
    public static let system = APNsEmulatorClock {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// ISO-8601 UTC timestamps with milliseconds, as the rest of Switchboard writes them.
enum Timestamp {
    /// `2024-05-01T12:00:00.123Z` for `milliseconds` since the epoch.
    static func iso8601(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds.quotientAndRemainder(dividingBy: 1000).quotient)
        var millis = Int(milliseconds % 1000)
        if millis < 0 {
            millis += 1000
            seconds -= 1
        }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
