/// One entry of a user's event feed: a signal to re-read a resource, never the new state
/// itself. References that do not apply are `null` in JSON.
public struct Event: Codable, Sendable, Equatable {
    /// The event id: one global, strictly increasing sequence.
    public var id: Int64
    /// What changed; clients ignore kinds they do not know.
    public var kind: String
    /// The conversation concerned, if any.
    public var conversationId: String?
    /// The group concerned, if any.
    public var groupId: String?
    /// The message concerned, if any.
    public var messageId: String?
    /// The call concerned, if any.
    public var callId: String?
    /// When it happened (ISO-8601 UTC, milliseconds).
    public var createdAt: String

    /// Creates an event value.
    public init(
        id: Int64, kind: String, conversationId: String? = nil, groupId: String? = nil,
        messageId: String? = nil, callId: String? = nil, createdAt: String
    ) {
        self.id = id
        self.kind = kind
        self.conversationId = conversationId
        self.groupId = groupId
        self.messageId = messageId
        self.callId = callId
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, conversationId, groupId, messageId, callId, createdAt
    }

    /// Encodes every reference, writing `null` for those that do not apply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(messageId, forKey: .messageId)
        try container.encode(callId, forKey: .callId)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// The event kinds the server writes today. Kinds may grow.
public enum EventKind {
    public static let friendRequest = "friend_request"
    public static let friendAccepted = "friend_accepted"
    public static let friendRemoved = "friend_removed"
    public static let blockChanged = "block_changed"
    public static let groupMembersChanged = "group_members_changed"
    public static let groupChanged = "group_changed"
    public static let message = "message"
    public static let messageRead = "message_read"
    public static let groupMessage = "group_message"
    public static let groupMessageRead = "group_message_read"
    public static let callChanged = "call_changed"
    /// A live-location share in the conversation or group started, moved, stopped or expired.
    public static let liveLocationChanged = "live_location_changed"
    /// New end-to-end-encrypted items wait in one of the user's device queues of the
    /// conversation or group (`GET /e2ee/…/events`).
    public static let e2ee = "e2ee"
    /// The user's Call Directory list changed (their own entries or an organisation's): read
    /// `GET /call-directory?since=…` and reload the Call Directory extension.
    public static let callDirectoryChanged = "call_directory_changed"
    /// A call of the group was scheduled, moved, started or cancelled (`groupId`): read
    /// `GET /scheduled-calls` (or the group's).
    public static let scheduledCallChanged = "scheduled_call_changed"
}

/// The answer of `GET /events`: at most 100 events in ascending id order, and the cursor to
/// pass as `after` next time (the last id returned, or `after` itself when empty).
public struct EventsPage: Codable, Sendable, Equatable {
    /// The events.
    public var events: [Event]
    /// The cursor.
    public var cursor: Int64

    /// Creates the value.
    public init(events: [Event], cursor: Int64) {
        self.events = events
        self.cursor = cursor
    }
}
