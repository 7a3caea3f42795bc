/// One entry of a user's event feed: a signal to re-read a resource, never the new state
/// itself. References that do not apply are `null` in JSON.
public struct Event: Codable, Sendable, Equatable {
    /// The event id: one global, strictly increasing sequence.
    public var id: Int64
    /// What changed; clients ignore kinds they do not know.
    public var kind: EventKind
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
        id: Int64, kind: EventKind, conversationId: String? = nil, groupId: String? = nil,
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

/// What an event says changed. Kinds may grow: one this version does not know decodes as
/// `unknown(String)`, and clients ignore it.
public enum EventKind: WireEnum {
    case friendRequest
    case friendAccepted
    case friendRemoved
    case blockChanged
    case groupMembersChanged
    case groupChanged
    case message
    case messageRead
    case groupMessage
    case groupMessageRead
    case callChanged
    /// A live-location share in the conversation or group started, moved, stopped or expired.
    case liveLocationChanged
    /// New end-to-end-encrypted items wait in one of the user's device queues of the
    /// conversation or group (`GET /e2ee/…/events`).
    case e2ee
    /// The user's Call Directory list changed (their own entries or an organisation's): read
    /// `GET /call-directory?since=…` and reload the Call Directory extension.
    case callDirectoryChanged
    /// A call of the group was scheduled, moved, started or cancelled (`groupId`): read
    /// `GET /scheduled-calls` (or the group's).
    case scheduledCallChanged
    case unknown(String)

    public static let known: [EventKind] = [
        .friendRequest, .friendAccepted, .friendRemoved, .blockChanged, .groupMembersChanged, .groupChanged,
        .message, .messageRead, .groupMessage, .groupMessageRead, .callChanged, .liveLocationChanged, .e2ee,
        .callDirectoryChanged, .scheduledCallChanged,
    ]

    public var rawValue: String {
        switch self {
        case .friendRequest: "friend_request"
        case .friendAccepted: "friend_accepted"
        case .friendRemoved: "friend_removed"
        case .blockChanged: "block_changed"
        case .groupMembersChanged: "group_members_changed"
        case .groupChanged: "group_changed"
        case .message: "message"
        case .messageRead: "message_read"
        case .groupMessage: "group_message"
        case .groupMessageRead: "group_message_read"
        case .callChanged: "call_changed"
        case .liveLocationChanged: "live_location_changed"
        case .e2ee: "e2ee"
        case .callDirectoryChanged: "call_directory_changed"
        case .scheduledCallChanged: "scheduled_call_changed"
        case .unknown(let value): value
        }
    }
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
