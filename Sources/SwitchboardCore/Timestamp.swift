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
    ///
    /// Written digit by digit: this runs for every log line and every stored row, and
    /// `String(format:)` (through Foundation's CFString formatter) cost several times more.
    public static func iso8601(milliseconds: Int64) -> String {
        var (quotient, millis) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        if millis < 0 {
            millis += 1000
            quotient -= 1
        }
        var seconds = time_t(quotient)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            return String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                year, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
        }
        return String(unsafeUninitializedCapacity: 24) { text in
            func put(_ value: Int, digits: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    text[index] = UInt8(truncatingIfNeeded: 48 + value % 10)
                    value /= 10
                }
            }
            put(year, digits: 4, at: 0)
            text[4] = UInt8(ascii: "-")
            put(Int(parts.tm_mon) + 1, digits: 2, at: 5)
            text[7] = UInt8(ascii: "-")
            put(Int(parts.tm_mday), digits: 2, at: 8)
            text[10] = UInt8(ascii: "T")
            put(Int(parts.tm_hour), digits: 2, at: 11)
            text[13] = UInt8(ascii: ":")
            put(Int(parts.tm_min), digits: 2, at: 14)
            text[16] = UInt8(ascii: ":")
            put(Int(parts.tm_sec), digits: 2, at: 17)
            text[19] = UInt8(ascii: ".")
            put(Int(millis), digits: 3, at: 20)
            text[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    /// Parses ISO-8601 with a time zone (`Z` or an offset), with or without fractional
    /// seconds: what `iso8601(_:)` writes, and what a client may send.
    /// RFC 3339 lets the `T` and the `Z` be lower case.
    public static func date(_ text: String) -> Date? {
        let text = text.uppercased()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

extension Duration {
    /// The duration in (fractional) seconds, for APIs that take a `TimeInterval`.
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
