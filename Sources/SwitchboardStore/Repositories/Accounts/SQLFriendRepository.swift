import SwitchboardWire

/// ``FriendRepository`` in SQL that SQLite and PostgreSQL both run (tables `friend_requests`,
/// `friendships`, `blocks`, `conversations`), working on the connection of one transaction or
/// snapshot. Pairs are stored smaller id first.
package struct SQLFriendRepository: FriendRepository {
    package let connection: any SQLExecutor

    private static func ordered(_ a: String, _ b: String) -> (String, String) { a < b ? (a, b) : (b, a) }

    package func request(_ id: String) throws -> FriendRequest? {
        try requests(where: "r.id = ?1", [.text(id)]).first
    }

    package func pendingRequest(between a: String, and b: String) throws -> FriendRequest? {
        try requests(
            where:
                "r.state = 'pending' AND ((r.from_user = ?1 AND r.to_user = ?2) OR (r.from_user = ?2 AND r.to_user = ?1))",
            [.text(a), .text(b)]
        ).first
    }

    package func pendingRequests(involving userID: String) throws -> [FriendRequest] {
        try requests(where: "r.state = 'pending' AND (r.from_user = ?1 OR r.to_user = ?1)", [.text(userID)])
    }

    package func createRequest(id: String, from senderID: String, to recipientID: String, at timestamp: String) throws {
        try connection.run(
            "INSERT INTO friend_requests (id, from_user, to_user, state, created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?)",
            [.text(id), .text(senderID), .text(recipientID), .text(timestamp), .text(timestamp)])
    }

    package func settleRequest(_ id: String, as state: FriendRequestState, at timestamp: String) throws {
        try connection.run(
            "UPDATE friend_requests SET state = ?, updated_at = ? WHERE id = ?",
            [.text(state.rawValue), .text(timestamp), .text(id)])
    }

    package func cancelPendingRequests(between a: String, and b: String, at timestamp: String) throws -> Int {
        try connection.run(
            "UPDATE friend_requests SET state = 'cancelled', updated_at = ?3 WHERE state = 'pending' AND ((from_user = ?1 AND to_user = ?2) OR (from_user = ?2 AND to_user = ?1))",
            [.text(a), .text(b), .text(timestamp)])
    }

    package func friendship(between a: String, and b: String) throws -> Friendship? {
        let (first, second) = Self.ordered(a, b)
        return try connection.query(
            "SELECT conversation_id, created_at FROM friendships WHERE user_a = ? AND user_b = ?",
            [.text(first), .text(second)]
        ).first.map { Friendship(conversationID: try $0.string("conversation_id"), since: try $0.string("created_at")) }
    }

    package func addFriendship(between a: String, and b: String, conversationID: String, at timestamp: String) throws {
        let (first, second) = Self.ordered(a, b)
        try connection.run(
            "INSERT INTO friendships (user_a, user_b, conversation_id, created_at) VALUES (?, ?, ?, ?)",
            [.text(first), .text(second), .text(conversationID), .text(timestamp)])
    }

    package func removeFriendship(between a: String, and b: String) throws {
        let (first, second) = Self.ordered(a, b)
        try connection.run("DELETE FROM friendships WHERE user_a = ? AND user_b = ?", [.text(first), .text(second)])
    }

    package func friends(of userID: String) throws -> [Friend] {
        try connection.query(
            """
            SELECT u.id, u.username, u.display_name, f.conversation_id, f.created_at FROM friendships f
            JOIN users u ON u.id = CASE WHEN f.user_a = ?1 THEN f.user_b ELSE f.user_a END
            WHERE f.user_a = ?1 OR f.user_b = ?1 ORDER BY u.username
            """,
            [.text(userID)]
        ).map {
            Friend(
                user: try SQLAccountRepository.user(from: $0), conversationId: try $0.string("conversation_id"),
                since: try $0.string("created_at"))
        }
    }

    package func isBlocked(between a: String, and b: String) throws -> Bool {
        try !connection.query(
            "SELECT 1 FROM blocks WHERE (blocker = ?1 AND blocked = ?2) OR (blocker = ?2 AND blocked = ?1) LIMIT 1",
            [.text(a), .text(b)]
        ).isEmpty
    }

    package func blockedAt(blocker: String, blocked: String) throws -> String? {
        try connection.query(
            "SELECT created_at FROM blocks WHERE blocker = ? AND blocked = ?", [.text(blocker), .text(blocked)]
        )
        .first.map { try $0.string("created_at") }
    }

    package func addBlock(blocker: String, blocked: String, at timestamp: String) throws {
        try connection.run(
            "INSERT INTO blocks (blocker, blocked, created_at) VALUES (?, ?, ?)",
            [.text(blocker), .text(blocked), .text(timestamp)])
    }

    package func removeBlock(blocker: String, blocked: String) throws -> Bool {
        try connection.run("DELETE FROM blocks WHERE blocker = ? AND blocked = ?", [.text(blocker), .text(blocked)]) > 0
    }

    package func blocks(by blocker: String) throws -> [Block] {
        try connection.query(
            "SELECT u.id, u.username, u.display_name, b.created_at FROM blocks b JOIN users u ON u.id = b.blocked WHERE b.blocker = ? ORDER BY u.username",
            [.text(blocker)]
        ).map { Block(user: try SQLAccountRepository.user(from: $0), createdAt: try $0.string("created_at")) }
    }

    package func conversation(_ id: String) throws -> StoredConversation? {
        try connection.query("SELECT id, user_a, user_b, created_at FROM conversations WHERE id = ?", [.text(id)]).first
            .map {
                StoredConversation(
                    id: try $0.string("id"), userA: try $0.string("user_a"), userB: try $0.string("user_b"),
                    createdAt: try $0.string("created_at"))
            }
    }

    package func conversationID(between a: String, and b: String) throws -> String? {
        let (first, second) = Self.ordered(a, b)
        return try connection.query(
            "SELECT id FROM conversations WHERE user_a = ? AND user_b = ?", [.text(first), .text(second)]
        )
        .first.map { try $0.string("id") }
    }

    package func createConversation(id: String, between a: String, and b: String, at timestamp: String) throws {
        let (first, second) = Self.ordered(a, b)
        try connection.run(
            "INSERT INTO conversations (id, user_a, user_b, created_at) VALUES (?, ?, ?, ?)",
            [.text(id), .text(first), .text(second), .text(timestamp)])
    }

    package func conversationIDs(of userID: String) throws -> [String] {
        try connection.query(
            "SELECT id FROM conversations WHERE user_a = ?1 OR user_b = ?1 ORDER BY created_at, id", [.text(userID)]
        )
        .map { try $0.string("id") }
    }

    private func requests(where condition: String, _ bindings: [SQLiteValue]) throws -> [FriendRequest] {
        try connection.query(
            """
            SELECT r.id AS request_id, r.state, r.created_at, r.updated_at,
                   f.id AS f_id, f.username AS f_username, f.display_name AS f_display_name,
                   t.id AS t_id, t.username AS t_username, t.display_name AS t_display_name
            FROM friend_requests r JOIN users f ON f.id = r.from_user JOIN users t ON t.id = r.to_user
            WHERE \(condition) ORDER BY r.created_at, r.id
            """,
            bindings
        ).map { row in
            FriendRequest(
                id: try row.string("request_id"), from: try SQLAccountRepository.user(from: row, prefix: "f_"),
                to: try SQLAccountRepository.user(from: row, prefix: "t_"),
                state: try row.known("state", as: FriendRequestState.self),
                createdAt: try row.string("created_at"), updatedAt: try row.string("updated_at"))
        }
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
