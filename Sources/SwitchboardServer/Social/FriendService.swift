import SwitchboardStore
import SwitchboardWire

/// Friend requests, friendships and blocks. Every change writes events to both users in the
/// same transaction.
struct FriendService: Sendable {
    let store: ServerStore
    let calls: CallService

    func sendRequest(_ request: SendFriendRequest, from principal: Principal) async throws -> FriendRequest {
        let me = principal.user
        return try await store.write { transaction in
            let connection = transaction.connection
            let target: User?
            switch (request.username, request.userId) {
            case (let username?, nil): target = try SocialQueries.user(username: username, in: connection)
            case (nil, let userID?): target = try SocialQueries.user(userID, in: connection)
            default: throw APIError.validation("send exactly one of 'username' and 'userId'")
            }
            guard let target else { throw APIError.notFound("no such user") }
            // Not a 400: the body is well-formed; who sends it is what makes it impossible.
            guard target.id != me.id else {
                throw APIError(status: 409, code: "CANNOT_BEFRIEND_SELF", message: "you cannot befriend yourself")
            }
            if try SocialQueries.isBlocked(me.id, target.id, in: connection) {
                throw APIError(status: 403, code: "BLOCKED", message: "one of you has blocked the other")
            }
            if try SocialQueries.friendship(me.id, target.id, in: connection) != nil {
                throw APIError(status: 409, code: "ALREADY_FRIENDS", message: "you are already friends")
            }
            let pending = try connection.query(
                "SELECT from_user FROM friend_requests WHERE state = 'pending' AND ((from_user = ?1 AND to_user = ?2) OR (from_user = ?2 AND to_user = ?1))",
                [.text(me.id), .text(target.id)])
            if let row = pending.first {
                let theirs = try row.string("from_user") == target.id
                throw APIError(
                    status: 409, code: "REQUEST_PENDING",
                    message: theirs ? "they already sent you a request: accept it" : "your request is still pending")
            }
            let id = transaction.newID()
            try connection.run(
                "INSERT INTO friend_requests (id, from_user, to_user, state, created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?)",
                [.text(id), .text(me.id), .text(target.id), .text(transaction.timestamp), .text(transaction.timestamp)])
            try transaction.appendEvent(EventKind.friendRequest, to: [target.id, me.id])
            return FriendRequest(id: id, from: me, to: target, state: "pending", createdAt: transaction.timestamp, updatedAt: transaction.timestamp)
        }
    }

    func pendingRequests(for principal: Principal) async throws -> FriendRequestList {
        let userID = principal.user.id
        return try await store.read { connection in
            let requests = try Self.requests(
                where: "r.state = 'pending' AND (r.from_user = ?1 OR r.to_user = ?1)", [.text(userID)], in: connection)
            return FriendRequestList(
                incoming: requests.filter { $0.to.id == userID }, outgoing: requests.filter { $0.from.id == userID })
        }
    }

    /// The recipient accepts: friendship, the pair's conversation, `friend_accepted` to both.
    func accept(_ requestID: String, by principal: Principal) async throws -> Friend {
        let me = principal.user
        return try await store.write { transaction in
            let request = try Self.pending(requestID, for: me.id, role: .recipient, in: transaction.connection)
            if try SocialQueries.isBlocked(request.from.id, me.id, in: transaction.connection) {
                throw APIError(status: 403, code: "BLOCKED", message: "one of you has blocked the other")
            }
            try Self.settle(requestID, as: "accepted", in: transaction)
            let conversationID = try SocialQueries.conversation(between: me.id, and: request.from.id, in: transaction)
            let (first, second) = SocialQueries.ordered(me.id, request.from.id)
            try transaction.connection.run(
                "INSERT INTO friendships (user_a, user_b, conversation_id, created_at) VALUES (?, ?, ?, ?)",
                [.text(first), .text(second), .text(conversationID), .text(transaction.timestamp)])
            try transaction.appendEvent(EventKind.friendAccepted, to: [request.from.id, me.id], conversationID: conversationID)
            return Friend(user: request.from, conversationId: conversationID, since: transaction.timestamp)
        }
    }

    func decline(_ requestID: String, by principal: Principal) async throws -> FriendRequest {
        try await settle(requestID, by: principal, role: .recipient, state: "declined")
    }

    func cancel(_ requestID: String, by principal: Principal) async throws {
        _ = try await settle(requestID, by: principal, role: .sender, state: "cancelled")
    }

    private func settle(_ requestID: String, by principal: Principal, role: Role, state: String) async throws -> FriendRequest {
        let userID = principal.user.id
        return try await store.write { transaction in
            var request = try Self.pending(requestID, for: userID, role: role, in: transaction.connection)
            try Self.settle(requestID, as: state, in: transaction)
            try transaction.appendEvent(EventKind.friendRequest, to: [request.from.id, request.to.id])
            request.state = state
            request.updatedAt = transaction.timestamp
            return request
        }
    }

    func friends(of principal: Principal) async throws -> [Friend] {
        let userID = principal.user.id
        return try await store.read { connection in
            try connection.query(
                """
                SELECT u.id, u.username, u.display_name, f.conversation_id, f.created_at FROM friendships f
                JOIN users u ON u.id = CASE WHEN f.user_a = ?1 THEN f.user_b ELSE f.user_a END
                WHERE f.user_a = ?1 OR f.user_b = ?1 ORDER BY u.username
                """,
                [.text(userID)]
            ).map { Friend(user: try SocialQueries.user(from: $0), conversationId: try $0.string("conversation_id"), since: try $0.string("created_at")) }
        }
    }

    /// Ends the friendship; the conversation and its history stay.
    func removeFriend(_ friendID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        let friendship = try await store.read { try SocialQueries.friendship(userID, friendID, in: $0) }
        guard let friendship else { throw APIError.notFound("not a friend") }
        await calls.withdrawMedia(scopeKind: .conversation, scopeID: friendship.conversationID)
        _ = try await store.write { transaction in
            guard let friendship = try SocialQueries.friendship(userID, friendID, in: transaction.connection) else {
                throw APIError.notFound("not a friend")
            }
            let (first, second) = SocialQueries.ordered(userID, friendID)
            try transaction.connection.run("DELETE FROM friendships WHERE user_a = ? AND user_b = ?", [.text(first), .text(second)])
            try CallService.endLiveCall(scopeKind: .conversation, scopeID: friendship.conversationID, reason: .unfriended, in: transaction)
            try transaction.appendEvent(EventKind.friendRemoved, to: [friendID, userID], conversationID: friendship.conversationID)
        }
    }

    /// The pair's conversation id, if they have one.
    private func conversation(_ a: String, _ b: String) async throws -> String? {
        let (first, second) = SocialQueries.ordered(a, b)
        return try await store.read { connection in
            try connection.query("SELECT id FROM conversations WHERE user_a = ? AND user_b = ?", [.text(first), .text(second)])
                .first.map { try $0.string("id") }
        }
    }

    func blocks(of principal: Principal) async throws -> [Block] {
        let userID = principal.user.id
        return try await store.read { connection in
            try connection.query(
                "SELECT u.id, u.username, u.display_name, b.created_at FROM blocks b JOIN users u ON u.id = b.blocked WHERE b.blocker = ? ORDER BY u.username",
                [.text(userID)]
            ).map { Block(user: try SocialQueries.user(from: $0), createdAt: try $0.string("created_at")) }
        }
    }

    /// Blocks `targetID` (idempotent). Pending requests between the two are cancelled; the
    /// friendship and the shared history stay, but no new interaction is possible.
    func block(_ targetID: String, by principal: Principal) async throws -> Block {
        let userID = principal.user.id
        let alreadyBlocked = try await store.read { connection in
            try !connection.query("SELECT 1 FROM blocks WHERE blocker = ? AND blocked = ?", [.text(userID), .text(targetID)]).isEmpty
        }
        let conversationID = targetID == userID ? nil : try await conversation(userID, targetID)
        if let conversationID, !alreadyBlocked { await calls.withdrawMedia(scopeKind: .conversation, scopeID: conversationID) }
        return try await store.write { transaction in
            let connection = transaction.connection
            guard let target = try SocialQueries.user(targetID, in: connection) else { throw APIError.notFound("no such user") }
            guard target.id != userID else {
                throw APIError(status: 409, code: "CANNOT_BLOCK_SELF", message: "you cannot block yourself")
            }
            if let row = try connection.query("SELECT created_at FROM blocks WHERE blocker = ? AND blocked = ?", [.text(userID), .text(targetID)]).first {
                return Block(user: target, createdAt: try row.string("created_at"))
            }
            try connection.run("INSERT INTO blocks (blocker, blocked, created_at) VALUES (?, ?, ?)", [.text(userID), .text(targetID), .text(transaction.timestamp)])
            let cancelled = try connection.run(
                "UPDATE friend_requests SET state = 'cancelled', updated_at = ?3 WHERE state = 'pending' AND ((from_user = ?1 AND to_user = ?2) OR (from_user = ?2 AND to_user = ?1))",
                [.text(userID), .text(targetID), .text(transaction.timestamp)])
            if cancelled > 0 { try transaction.appendEvent(EventKind.friendRequest, to: [userID, targetID]) }
            if let conversationID {
                try CallService.endLiveCall(scopeKind: .conversation, scopeID: conversationID, reason: .blocked, in: transaction)
            }
            try transaction.appendEvent(
                EventKind.blockChanged, to: [userID, targetID],
                conversationID: try SocialQueries.friendship(userID, targetID, in: connection)?.conversationID)
            return Block(user: target, createdAt: transaction.timestamp)
        }
    }

    /// Lifts a block (idempotent).
    func unblock(_ targetID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        _ = try await store.write { transaction in
            guard try SocialQueries.user(targetID, in: transaction.connection) != nil else { throw APIError.notFound("no such user") }
            let removed = try transaction.connection.run("DELETE FROM blocks WHERE blocker = ? AND blocked = ?", [.text(userID), .text(targetID)])
            if removed > 0 {
                let conversationID = try SocialQueries.friendship(userID, targetID, in: transaction.connection)?.conversationID
                try transaction.appendEvent(EventKind.blockChanged, to: [userID, targetID], conversationID: conversationID)
            }
        }
    }

    // MARK: Helpers

    enum Role {
        case sender
        case recipient
    }

    /// The request, if `userID` is part of it (404 otherwise), in the given role (403 otherwise),
    /// and still pending (409 otherwise).
    private static func pending(_ requestID: String, for userID: String, role: Role, in connection: SQLiteConnection) throws -> FriendRequest {
        guard let request = try requests(where: "r.id = ?1", [.text(requestID)], in: connection).first,
            request.from.id == userID || request.to.id == userID
        else { throw APIError.notFound("no such friend request") }
        switch role {
        case .recipient where request.to.id != userID:
            throw APIError(status: 403, code: "FORBIDDEN", message: "only the recipient can answer a friend request")
        case .sender where request.from.id != userID:
            throw APIError(status: 403, code: "FORBIDDEN", message: "only the sender can cancel a friend request")
        default: break
        }
        guard request.state == "pending" else {
            throw APIError(status: 409, code: "REQUEST_NOT_PENDING", message: "the request is already \(request.state)")
        }
        return request
    }

    private static func settle(_ requestID: String, as state: String, in transaction: WriteTransaction) throws {
        try transaction.connection.run(
            "UPDATE friend_requests SET state = ?, updated_at = ? WHERE id = ?", [.text(state), .text(transaction.timestamp), .text(requestID)])
    }

    private static func requests(where condition: String, _ bindings: [SQLiteValue], in connection: SQLiteConnection) throws -> [FriendRequest] {
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
                id: try row.string("request_id"), from: try SocialQueries.user(from: row, prefix: "f_"),
                to: try SocialQueries.user(from: row, prefix: "t_"), state: try row.string("state"),
                createdAt: try row.string("created_at"), updatedAt: try row.string("updated_at"))
        }
    }
}
