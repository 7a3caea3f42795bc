import Foundation

/// ISO-8601 UTC timestamps with milliseconds, as the API, the logs and the APNs emulator write
/// them: `2026-11-30T04:10:32.880Z`.
public enum Timestamp {
    /// Formats a date; see `iso8601(_:)`.
    public static func string(_ date: Date) -> String { iso8601(date) }

    /// Formats `date` (rounded down to the millisecond).
    public static func iso8601(_ date: Date) -> String {
        iso8601(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// Formats `milliseconds` since the epoch (before 1970 too).
    public static func iso8601(milliseconds: Int64) -> String {
        var (quotient, millis) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        if millis < 0 {
            millis += 1000
            quotient -= 1
        }
        var seconds = time_t(quotient)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
    }
}

extension Duration {
    /// The duration in (fractional) seconds, for APIs that take a `TimeInterval`.
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
