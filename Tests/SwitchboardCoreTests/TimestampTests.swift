import Foundation
import SwitchboardCore
import Testing

@Suite("Timestamps", .timeLimit(.minutes(1)))
struct TimestampTests {
    @Test func millisecondsSinceTheEpochAreISO8601UTC() {
        #expect(Timestamp.iso8601(milliseconds: 1_700_000_000_123) == "2023-11-14T22:13:20.123Z")
        #expect(Timestamp.iso8601(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.iso8601(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func parsingTakesWhatRFC3339AllowsLowerCaseTAndZIncluded() {
        let expected = Date(timeIntervalSince1970: 1_700_000_000.123)
        for text in ["2023-11-14T22:13:20.123Z", "2023-11-14t22:13:20.123z", "2023-11-14T23:13:20.123+01:00"] {
            #expect(Timestamp.date(text).map { abs($0.timeIntervalSince(expected)) < 0.0005 } == true, "\(text)")
        }
        #expect(Timestamp.date("2023-11-14 22:13:20Z") == nil)
    }

    @Test func aDateIsRoundedDownToItsMillisecond() {
        #expect(Timestamp.iso8601(Date(timeIntervalSince1970: 1_700_000_000.1239)) == "2023-11-14T22:13:20.123Z")
    }

    /// The digit-by-digit formatter against `String(format:)` over gmtime, for 20,000 instants
    /// spread over years 1 to 9999 (and the edges of each field); mismatches are counted, not
    /// diffed.
    @Test func theHandWrittenFormatterAgreesWithPrintfEverywhere() {
        func reference(_ milliseconds: Int64) -> String {
            var (quotient, millis) = milliseconds.quotientAndRemainder(dividingBy: 1000)
            if millis < 0 {
                millis += 1000
                quotient -= 1
            }
            var seconds = time_t(quotient)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            return String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
        }
        var generator = SystemRandomNumberGenerator()
        // Year 1 to year 9999.
        let range: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999
        var instants: [Int64] = [range.lowerBound, range.upperBound, 0, -1, 951_782_400_000, 4_107_542_399_999]
        for _ in 0..<20_000 { instants.append(Int64.random(in: range, using: &generator)) }
        let mismatches = instants.filter { Timestamp.iso8601(milliseconds: $0) != reference($0) }
        #expect(
            mismatches.count == 0,
            "first: \(mismatches.first.map { "\($0) -> \(Timestamp.iso8601(milliseconds: $0)) vs \(reference($0))" } ?? "")"
        )
        // Outside four-digit years it still answers (as printf does).
        #expect(Timestamp.iso8601(milliseconds: range.upperBound + 1) == reference(range.upperBound + 1))
    }
}
