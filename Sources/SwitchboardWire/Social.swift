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

/// A text message in a conversation or a group (exactly one of the two ids is set).
public struct Message: Codable, Sendable, Equatable {
    public var id: String
    public var conversationId: String?
    public var groupId: String?
    public var senderId: String
    public var text: String
    public var createdAt: String

    public init(
        id: String, conversationId: String?, groupId: String?, senderId: String, text: String, createdAt: String
    ) {
        self.id = id
        self.conversationId = conversationId
        self.groupId = groupId
        self.senderId = senderId
        self.text = text
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey { case id, conversationId, groupId, senderId, text, createdAt }

    /// Writes `null` for the scope that does not apply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(senderId, forKey: .senderId)
        try container.encode(text, forKey: .text)
        try container.encode(createdAt, forKey: .createdAt)
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
