/// What the emulator has seen since it started, as `GET /control/stats` reports it.
public struct APNsEmulatorStats: Sendable, Hashable {
    /// Push answers by `"<status>"` (200) or `"<status> <reason>"` (`"410 Unregistered"`).
    public var responses: [String: Int] = [:]
    /// Connections accepted since start.
    public var connectionsAccepted = 0
    /// Connections open now.
    public var connectionsOpen = 0
    /// Streams (requests) received, of any path.
    public var streams = 0
    /// Push requests received (`/3/device/…`), answered or not.
    public var pushRequests = 0
    /// Pushes accepted into an inbox.
    public var pushesDelivered = 0
    /// Streams reset with `REFUSED_STREAM` by a fault.
    public var streamsRefused = 0
    /// Delayed answers whose stream the client closed first (the push was not delivered).
    public var delayedAnswersAbandoned = 0
    /// GOAWAY frames sent by a fault.
    public var goawaysSent = 0
    /// GOAWAY frames sent for any reason: faults, protocol errors, and nghttp2's own guard
    /// against rapid stream resets (which closes a connection whose client resets streams
    /// faster than 33/s after a burst of 1,000).
    public var goawaysSentTotal = 0
    /// RST_STREAM frames received from clients.
    public var resetsReceived = 0
    /// Pushes delivered whose `apns-id` had been delivered before (a resend of a push that
    /// was already processed: what a phone must dedupe).
    public var duplicateDeliveries = 0
    /// Inbox long polls waiting now.
    public var longPollsWaiting = 0

    /// Creates empty statistics.
    public init() {}

    /// The JSON body of `GET /control/stats`.
    var json: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("responses")
        json.beginObject()
        for key in responses.keys.sorted() { json.member(key, responses[key]!) }
        json.endObject()
        json.member("connectionsAccepted", connectionsAccepted)
        json.member("connectionsOpen", connectionsOpen)
        json.member("streams", streams)
        json.member("pushRequests", pushRequests)
        json.member("pushesDelivered", pushesDelivered)
        json.member("streamsRefused", streamsRefused)
        json.member("delayedAnswersAbandoned", delayedAnswersAbandoned)
        json.member("goawaysSent", goawaysSent)
        json.member("goawaysSentTotal", goawaysSentTotal)
        json.member("resetsReceived", resetsReceived)
        json.member("duplicateDeliveries", duplicateDeliveries)
        json.member("longPollsWaiting", longPollsWaiting)
        json.endObject()
        return json.bytes
    }
}
