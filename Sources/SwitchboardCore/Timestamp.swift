import Foundation

/// ISO-8601 UTC timestamps with milliseconds, as the API uses everywhere.
public enum Timestamp {
    /// Formats a date; see `iso8601(_:)`.
    public static func string(_ date: Date) -> String { iso8601(date) }

    /// Formats `2026-11-30T04:10:32.880Z`.
    public static func iso8601(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int(milliseconds % 1000)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}
