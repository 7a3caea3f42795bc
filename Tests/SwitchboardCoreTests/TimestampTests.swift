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

    @Test func aDateIsRoundedDownToItsMillisecond() {
        #expect(Timestamp.iso8601(Date(timeIntervalSince1970: 1_700_000_000.1239)) == "2023-11-14T22:13:20.123Z")
    }
}
