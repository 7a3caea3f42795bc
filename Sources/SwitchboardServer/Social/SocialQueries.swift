import SwitchboardWire

/// Reads of the social graph shared by the social services and calls, with the API's answers
/// (404) where a read finds nothing; over any transaction's or snapshot's repositories.
enum SocialQueries {
    static func user(_ id: String, in repositories: any Repositories) throws -> User? {
        try repositories.accounts.user(id: id)
    }

    static func user(username: String, in repositories: any Repositories) throws -> User? {
        try repositories.accounts.user(username: username.lowercased())
    }

    /// The pair's friendship: its conversation and since when; `nil` when not friends.
    static func friendship(_ a: String, _ b: String, in repositories: any Repositories) throws -> Friendship? {
        try repositories.friends.friendship(between: a, and: b)
    }

    /// Whether either of the two blocked the other.
    static func isBlocked(_ a: String, _ b: String, in repositories: any Repositories) throws -> Bool {
        try repositories.friends.isBlocked(between: a, and: b)
    }

    /// The peer of `userID` in a conversation they take part in; 404 for anyone else.
    static func conversationPeer(
        _ conversationID: String, of userID: String, in repositories: any Repositories
    ) throws -> String {
        guard let conversation = try repositories.friends.conversation(conversationID),
            conversation.userA == userID || conversation.userB == userID
        else { throw APIError.notFound("no such conversation") }
        return conversation.userA == userID ? conversation.userB : conversation.userA
    }

    /// The pair's conversation, created when missing (it outlives unfriending).
    static func conversation(between a: String, and b: String, in transaction: WriteTransaction) throws -> String {
        let friends = transaction.friends
        if let id = try friends.conversationID(between: a, and: b) { return id }
        let id = transaction.newID()
        try friends.createConversation(id: id, between: a, and: b, at: transaction.timestamp)
        return id
    }

    /// A live group, if `userID` is a member; 404 otherwise (non-members cannot see it).
    static func group(
        _ groupID: String, visibleTo userID: String, in repositories: any Repositories
    ) throws -> StoredGroup {
        guard let group = try repositories.groups.group(groupID, visibleTo: userID) else {
            throw APIError.notFound("no such group")
        }
        return group
    }

    static func memberIDs(of groupID: String, in repositories: any Repositories) throws -> [String] {
        try repositories.groups.memberIDs(of: groupID)
    }
}
