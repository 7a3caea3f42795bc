import SwitchboardWire

/// Two users' friendship: their conversation and since when.
public struct Friendship: Sendable, Equatable {
    public let conversationID: String
    public let since: String

    package init(conversationID: String, since: String) {
        self.conversationID = conversationID
        self.since = since
    }
}

/// A 1:1 conversation: its two participants (smaller id first) and when it began.
public struct StoredConversation: Sendable, Equatable {
    public let id: String
    public let userA: String
    public let userB: String
    public let createdAt: String

    package init(id: String, userA: String, userB: String, createdAt: String) {
        self.id = id
        self.userA = userA
        self.userB = userB
        self.createdAt = createdAt
    }
}

/// The friend graph: friend requests, friendships, blocks and the pairs' conversations (which
/// outlive unfriending). Pairs are unordered: either order names the same pair. SQLite
/// implements it today (``SQLFriendRepository``); the contract suite tests every
/// implementation.
public protocol FriendRepository {
    func request(_ id: String) throws -> FriendRequest?
    /// The pending request between the two, whichever sent it.
    func pendingRequest(between a: String, and b: String) throws -> FriendRequest?
    /// The pending requests the user sent or received, oldest first.
    func pendingRequests(involving userID: String) throws -> [FriendRequest]
    func createRequest(id: String, from senderID: String, to recipientID: String, at timestamp: String) throws
    /// Sets a request's state (`accepted`, `declined`, `cancelled`).
    func settleRequest(_ id: String, as state: FriendRequestState, at timestamp: String) throws
    /// Cancels the pending requests between the two; returns how many.
    func cancelPendingRequests(between a: String, and b: String, at timestamp: String) throws -> Int

    func friendship(between a: String, and b: String) throws -> Friendship?
    func addFriendship(between a: String, and b: String, conversationID: String, at timestamp: String) throws
    func removeFriendship(between a: String, and b: String) throws
    /// The user's friends, by username.
    func friends(of userID: String) throws -> [Friend]

    /// Whether either of the two blocked the other.
    func isBlocked(between a: String, and b: String) throws -> Bool
    /// When `blocker` blocked `blocked`, or nil.
    func blockedAt(blocker: String, blocked: String) throws -> String?
    func addBlock(blocker: String, blocked: String, at timestamp: String) throws
    /// Lifts the block; false when there was none.
    func removeBlock(blocker: String, blocked: String) throws -> Bool
    /// Whom the user blocked, by username.
    func blocks(by blocker: String) throws -> [Block]

    func conversation(_ id: String) throws -> StoredConversation?
    func conversationID(between a: String, and b: String) throws -> String?
    func createConversation(id: String, between a: String, and b: String, at timestamp: String) throws
    /// The user's conversations, oldest first.
    func conversationIDs(of userID: String) throws -> [String]
}
