import SwitchboardStore
import SwitchboardWire

/// Reads of the social graph shared by the social services and calls, with the API's answers
/// (404) where a read finds nothing. They still take the connection their callers hold and go
/// through the repositories on it, until the messages have a repository too and no service
/// needs the connection any more.
enum SocialQueries {
    // Until the social graph has its repository, these reads take the connection and go
    // through the accounts repository on it.
    static func user(_ id: String, in connection: SQLiteConnection) throws -> User? {
        try SQLiteAccountRepository(connection: connection).user(id: id)
    }

    static func user(username: String, in connection: SQLiteConnection) throws -> User? {
        try SQLiteAccountRepository(connection: connection).user(username: username.lowercased())
    }

    static func user(from row: SQLiteRow, prefix: String = "") throws -> User {
        try SQLiteAccountRepository.user(from: row, prefix: prefix)
    }

    /// The pair's friendship: its conversation and since when; `nil` when not friends.
    static func friendship(_ a: String, _ b: String, in connection: SQLiteConnection) throws -> (conversationID: String, since: String)? {
        try SQLiteFriendRepository(connection: connection).friendship(between: a, and: b).map { ($0.conversationID, $0.since) }
    }

    /// Whether either of the two blocked the other.
    static func isBlocked(_ a: String, _ b: String, in connection: SQLiteConnection) throws -> Bool {
        try SQLiteFriendRepository(connection: connection).isBlocked(between: a, and: b)
    }

    /// The conversation's two participants, if it exists.
    static func conversationParticipants(_ id: String, in connection: SQLiteConnection) throws -> (String, String, createdAt: String)? {
        try SQLiteFriendRepository(connection: connection).conversation(id).map { ($0.userA, $0.userB, $0.createdAt) }
    }

    /// The peer of `userID` in a conversation they take part in; 404 for anyone else.
    static func conversationPeer(_ conversationID: String, of userID: String, in connection: SQLiteConnection) throws -> String {
        guard let (a, b, _) = try conversationParticipants(conversationID, in: connection), a == userID || b == userID else {
            throw APIError.notFound("no such conversation")
        }
        return a == userID ? b : a
    }

    /// The pair's conversation, created when missing (it outlives unfriending).
    static func conversation(between a: String, and b: String, in transaction: WriteTransaction) throws -> String {
        let friends = transaction.friends
        if let id = try friends.conversationID(between: a, and: b) { return id }
        let id = transaction.newID()
        try friends.createConversation(id: id, between: a, and: b, at: transaction.timestamp)
        return id
    }

    /// A live group's row, if `userID` is a member; 404 otherwise (non-members cannot see it).
    static func group(_ groupID: String, visibleTo userID: String, in connection: SQLiteConnection) throws -> (name: String, ownerID: String, createdAt: String) {
        guard let group = try SQLiteGroupRepository(connection: connection).group(groupID, visibleTo: userID) else {
            throw APIError.notFound("no such group")
        }
        return (group.name, group.ownerID, group.createdAt)
    }

    static func memberIDs(of groupID: String, in connection: SQLiteConnection) throws -> [String] {
        try SQLiteGroupRepository(connection: connection).memberIDs(of: groupID)
    }
}
