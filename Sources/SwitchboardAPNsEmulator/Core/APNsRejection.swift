import SwitchboardObservability
import SwitchboardPushCore

/// A rejected push as the emulator answers it: a status, a reason for the JSON body and, for
/// 410, the time (milliseconds since the epoch) APNs "learned" the token was invalid.
public struct APNsRejection: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// The `reason` member of the JSON body.
    public var reason: String
    /// The `timestamp` member (milliseconds since the epoch), present with 410.
    public var timestamp: Int64?

    /// Creates a rejection with an explicit status and reason (for scripted `respond` faults).
    public init(status: Int, reason: String, timestamp: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Creates a rejection for a documented reason, with the reason's own status (400 for an
    /// unknown one).
    public init(_ reason: APNsReason, timestamp: Int64? = nil) {
        self.init(status: reason.status ?? 400, reason: reason.text, timestamp: timestamp)
    }

    /// The response body: `{"reason":"…"}` or `{"reason":"…","timestamp":…}`.
    public var body: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.member("reason", reason)
        if let timestamp { json.member("timestamp", timestamp) }
        json.endObject()
        return json.bytes
    }

    /// `"<status> <reason>"`, the key used in statistics.
    public var description: String { "\(status) \(reason)" }
}
