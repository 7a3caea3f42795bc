import SwitchboardCore
/// One push as the simulated phone receives it.
public struct APNsInboxMessage: Sendable, Hashable {
    /// Position in this token's inbox: 1 for the first push, then 2, 3, … (never reused).
    public var index: Int
    /// The `apns-id` the push was answered with (the client's, or one the emulator generated).
    public var apnsID: String
    /// The APNs headers of the push (`apns-topic`, `apns-push-type`, `apns-priority`,
    /// `apns-expiration`, `apns-collapse-id` as sent; never `authorization`).
    public var headers: [APNsHeader]
    /// The JSON payload, byte for byte.
    public var payload: [UInt8]
    /// When the emulator answered 200, in milliseconds since the epoch.
    public var receivedAt: Int64

    /// Writes `{"index","apnsId","headers":{…},"payload":{…},"receivedAt"}`.
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("index", index)
        json.member("apnsId", apnsID)
        json.key("headers")
        json.beginObject()
        for header in headers { json.member(header.name, header.value) }
        json.endObject()
        json.key("payload")
        json.raw(payload)
        json.member("receivedAt", Timestamp.iso8601(milliseconds: receivedAt))
        json.endObject()
    }
}

/// Every device token's inbox, in the order pushes were accepted; each keeps its newest
/// `capacity` messages.
struct InboxStore: Sendable {
    private struct Inbox {
        var messages: [APNsInboxMessage] = []
        var lastIndex = 0
    }

    private var inboxes: [String: Inbox] = [:]
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity >= 1, "InboxStore needs room for at least one message")
        self.capacity = capacity
    }

    /// Appends a push to `token`'s inbox and returns it with its index.
    @discardableResult
    mutating func append(
        token: String, apnsID: String, headers: [APNsHeader], payload: [UInt8], receivedAt: Int64
    ) -> APNsInboxMessage {
        // Mutated in place: copying the inbox out and back would copy every stored message per push.
        inboxes[token, default: Inbox()].lastIndex += 1
        let index = inboxes[token]!.lastIndex
        let message = APNsInboxMessage(
            index: index, apnsID: apnsID, headers: headers, payload: payload, receivedAt: receivedAt)
        inboxes[token]!.messages.append(message)
        let excess = inboxes[token]!.messages.count - capacity
        if excess > 0 { inboxes[token]!.messages.removeFirst(excess) }
        return message
    }

    /// The messages of `token` after index `after`, and the cursor to ask with next: the last
    /// index returned, or `after` when there is nothing new. When `after` is beyond the newest
    /// index (the emulator restarted, or the inbox was cleared), the cursor is the newest index,
    /// so a phone that follows the cursor starts over instead of waiting forever.
    func read(token: String, after: Int) -> (messages: [APNsInboxMessage], cursor: Int) {
        guard let inbox = inboxes[token] else { return ([], 0) }
        guard after <= inbox.lastIndex else { return ([], inbox.lastIndex) }
        let messages = inbox.messages.filter { $0.index > after }
        return (messages, messages.last?.index ?? after)
    }

    /// Whether `read(token:after:)` would answer without waiting.
    func hasNews(token: String, after: Int) -> Bool {
        guard let inbox = inboxes[token] else { return after > 0 }
        return inbox.lastIndex != after
    }

    /// Empties `token`'s inbox; its indices start again at 1.
    mutating func clear(token: String) {
        inboxes[token] = nil
    }
}
