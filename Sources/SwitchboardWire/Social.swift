/// Where a friend request stands.
public enum FriendRequestState: WireEnum {
    case pending
    case accepted
    case declined
    case cancelled
    case unknown(String)

    public static let known: [FriendRequestState] = [.pending, .accepted, .declined, .cancelled]

    public var rawValue: String {
        switch self {
        case .pending: "pending"
        case .accepted: "accepted"
        case .declined: "declined"
        case .cancelled: "cancelled"
        case .unknown(let value): value
        }
    }
}

/// A friend request between two users.
public struct FriendRequest: Codable, Sendable, Equatable {
    public var id: String
    public var from: User
    public var to: User
    public var state: FriendRequestState
    public var createdAt: String
    public var updatedAt: String

    public init(id: String, from: User, to: User, state: FriendRequestState, createdAt: String, updatedAt: String) {
        self.id = id
        self.from = from
        self.to = to
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `POST /friend-requests` body: name the other user by `username` or by `userId`.
public struct SendFriendRequest: Codable, Sendable, Equatable {
    public var username: String?
    public var userId: String?

    public init(username: String? = nil, userId: String? = nil) {
        self.username = username
        self.userId = userId
    }
}

/// The pending friend requests that concern the caller.
public struct FriendRequestList: Codable, Sendable, Equatable {
    public var incoming: [FriendRequest]
    public var outgoing: [FriendRequest]

    public init(incoming: [FriendRequest], outgoing: [FriendRequest]) {
        self.incoming = incoming
        self.outgoing = outgoing
    }
}

/// A friend and the pair's conversation.
public struct Friend: Codable, Sendable, Equatable {
    public var user: User
    public var conversationId: String
    public var since: String

    public init(user: User, conversationId: String, since: String) {
        self.user = user
        self.conversationId = conversationId
        self.since = since
    }
}

/// A user the caller blocked.
public struct Block: Codable, Sendable, Equatable {
    public var user: User
    public var createdAt: String

    public init(user: User, createdAt: String) {
        self.user = user
        self.createdAt = createdAt
    }
}

/// What a message is: a person's text, or the server's record of a call in its conversation or group.
public enum MessageKind: WireEnum {
    case text
    /// A call of the conversation or group ended; ``Message/call`` says how.
    case call
    case unknown(String)

    public static let known: [MessageKind] = [.text, .call]

    public var rawValue: String {
        switch self {
        case .text: "text"
        case .call: "call"
        case .unknown(let value): value
        }
    }
}

/// How a call ended, as its conversation shows it.
public enum CallOutcome: WireEnum {
    /// Someone answered; the call had a duration.
    case answered
    /// Nobody answered before the ring timed out.
    case missed
    /// The invitee declined (every invitee, in a group).
    case declined
    /// The caller hung up while it rang.
    case cancelled
    /// Every invitee was in another call.
    case busy
    case unknown(String)

    public static let known: [CallOutcome] = [.answered, .missed, .declined, .cancelled, .busy]

    public var rawValue: String {
        switch self {
        case .answered: "answered"
        case .missed: "missed"
        case .declined: "declined"
        case .cancelled: "cancelled"
        case .busy: "busy"
        case .unknown(let value): value
        }
    }
}

/// The call a `call` message records.
public struct CallSummary: Codable, Sendable, Equatable {
    public var callId: String
    public var mode: CallMode
    public var outcome: CallOutcome
    /// From the first answer to the end, in whole seconds; 0 for a call nobody answered.
    public var durationSeconds: Int

    public init(callId: String, mode: CallMode, outcome: CallOutcome, durationSeconds: Int) {
        self.callId = callId
        self.mode = mode
        self.outcome = outcome
        self.durationSeconds = durationSeconds
    }
}

/// A message in a conversation or a group (exactly one of the two ids is set): a person's
/// text, or a call's record (`kind` `call`, sent by the call's caller, with ``call`` set and a
/// plain-text ``text`` for clients that do not know the kind).
public struct Message: Codable, Sendable, Equatable {
    public var id: String
    public var conversationId: String?
    public var groupId: String?
    public var senderId: String
    public var text: String
    public var createdAt: String
    public var kind: MessageKind
    /// Set exactly when ``kind`` is `call`.
    public var call: CallSummary?

    public init(
        id: String, conversationId: String?, groupId: String?, senderId: String, text: String, createdAt: String,
        kind: MessageKind = .text, call: CallSummary? = nil
    ) {
        self.id = id
        self.conversationId = conversationId
        self.groupId = groupId
        self.senderId = senderId
        self.text = text
        self.createdAt = createdAt
        self.kind = kind
        self.call = call
    }

    enum CodingKeys: String, CodingKey { case id, conversationId, groupId, senderId, text, createdAt, kind, call }

    /// A message from a server before call messages is a text message.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        conversationId = try container.decodeIfPresent(String.self, forKey: .conversationId)
        groupId = try container.decodeIfPresent(String.self, forKey: .groupId)
        senderId = try container.decode(String.self, forKey: .senderId)
        text = try container.decode(String.self, forKey: .text)
        createdAt = try container.decode(String.self, forKey: .createdAt)
        kind = try container.decodeIfPresent(MessageKind.self, forKey: .kind) ?? .text
        call = try container.decodeIfPresent(CallSummary.self, forKey: .call)
    }

    /// Writes `null` for the scope that does not apply, and for `call` on a text message.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(senderId, forKey: .senderId)
        try container.encode(text, forKey: .text)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(kind, forKey: .kind)
        try container.encode(call, forKey: .call)
    }
}

/// `POST …/messages` body.
public struct SendMessage: Codable, Sendable, Equatable {
    /// 1–4000 characters.
    public var text: String
    /// Optional idempotency key (a UUID chosen by the client): resending the same one returns
    /// the message already stored.
    public var clientId: String?

    public init(text: String, clientId: String? = nil) {
        self.text = text
        self.clientId = clientId
    }
}

/// A page of messages, oldest first.
public struct MessagePage: Codable, Sendable, Equatable {
    public var messages: [Message]
    /// Whether older messages exist (pass the first message's id as `before`).
    public var hasMore: Bool

    public init(messages: [Message], hasMore: Bool) {
        self.messages = messages
        self.hasMore = hasMore
    }
}

/// `PUT …/read` body.
public struct MarkRead: Codable, Sendable, Equatable {
    /// The newest message the caller has read.
    public var messageId: String

    public init(messageId: String) { self.messageId = messageId }
}

/// Where one member has read up to.
public struct ReadMarker: Codable, Sendable, Equatable {
    public var userId: String
    public var messageId: String
    public var updatedAt: String

    public init(userId: String, messageId: String, updatedAt: String) {
        self.userId = userId
        self.messageId = messageId
        self.updatedAt = updatedAt
    }
}

/// A 1:1 conversation as its participants see it.
public struct Conversation: Codable, Sendable, Equatable {
    public var id: String
    /// The other participant.
    public var peer: User
    /// Whether the two are friends now.
    public var isFriend: Bool
    /// Whether new messages and calls are allowed: friends, and neither blocked the other.
    public var canInteract: Bool
    public var createdAt: String
    /// Both participants' read markers.
    public var readMarkers: [ReadMarker]

    public init(id: String, peer: User, isFriend: Bool, canInteract: Bool, createdAt: String, readMarkers: [ReadMarker])
    {
        self.id = id
        self.peer = peer
        self.isFriend = isFriend
        self.canInteract = canInteract
        self.createdAt = createdAt
        self.readMarkers = readMarkers
    }
}

/// A member of a group.
public struct GroupMember: Codable, Sendable, Equatable {
    public var user: User
    public var joinedAt: String

    public init(user: User, joinedAt: String) {
        self.user = user
        self.joinedAt = joinedAt
    }
}

/// A group with its members.
public struct Group: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var ownerId: String
    public var createdAt: String
    public var members: [GroupMember]
    public var readMarkers: [ReadMarker]

    public init(
        id: String, name: String, ownerId: String, createdAt: String, members: [GroupMember], readMarkers: [ReadMarker]
    ) {
        self.id = id
        self.name = name
        self.ownerId = ownerId
        self.createdAt = createdAt
        self.members = members
        self.readMarkers = readMarkers
    }
}

/// `POST /groups` body.
public struct CreateGroup: Codable, Sendable, Equatable {
    /// 1–100 characters.
    public var name: String
    /// Friends of the caller to add; the caller is always a member (and the owner).
    public var memberIds: [String]

    public init(name: String, memberIds: [String]) {
        self.name = name
        self.memberIds = memberIds
    }
}

/// `PATCH /groups/{id}` body.
public struct RenameGroup: Codable, Sendable, Equatable {
    public var name: String

    public init(name: String) { self.name = name }
}

/// `POST /groups/{id}/members` body.
public struct AddGroupMembers: Codable, Sendable, Equatable {
    public var userIds: [String]

    public init(userIds: [String]) { self.userIds = userIds }
}
