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
            let friends = transaction.friends
            let target: User?
            switch (request.username, request.userId) {
            case (let username?, nil): target = try transaction.accounts.user(username: username.lowercased())
            case (nil, let userID?): target = try transaction.accounts.user(id: userID)
            default: throw APIError.validation("send exactly one of 'username' and 'userId'")
            }
            guard let target else { throw APIError.notFound("no such user") }
            // Not a 400: the body is well-formed; who sends it is what makes it impossible.
            guard target.id != me.id else {
                throw APIError(.cannotBefriendSelf, "you cannot befriend yourself")
            }
            if try friends.isBlocked(between: me.id, and: target.id) {
                throw APIError(.blocked, "one of you has blocked the other")
            }
            if try friends.friendship(between: me.id, and: target.id) != nil {
                throw APIError(.alreadyFriends, "you are already friends")
            }
            if let pending = try friends.pendingRequest(between: me.id, and: target.id) {
                let theirs = pending.from.id == target.id
                throw APIError(
                    .requestPending,
                    theirs ? "they already sent you a request: accept it" : "your request is still pending")
            }
            let id = transaction.newID()
            try friends.createRequest(id: id, from: me.id, to: target.id, at: transaction.timestamp)
            try transaction.appendEvent(.friendRequest, to: [target.id, me.id])
            return FriendRequest(
                id: id, from: me, to: target, state: .pending, createdAt: transaction.timestamp,
                updatedAt: transaction.timestamp)
        }
    }

    func pendingRequests(for principal: Principal) async throws -> FriendRequestList {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            let requests = try snapshot.friends.pendingRequests(involving: userID)
            return FriendRequestList(
                incoming: requests.filter { $0.to.id == userID }, outgoing: requests.filter { $0.from.id == userID })
        }
    }

    /// The recipient accepts: friendship, the pair's conversation, `friend_accepted` to both.
    func accept(_ requestID: String, by principal: Principal) async throws -> Friend {
        let me = principal.user
        return try await store.write { transaction in
            let request = try Self.pending(requestID, for: me.id, role: .recipient, in: transaction.friends)
            if try transaction.friends.isBlocked(between: request.from.id, and: me.id) {
                throw APIError(.blocked, "one of you has blocked the other")
            }
            try Self.settle(requestID, as: .accepted, in: transaction)
            let conversationID = try SocialQueries.conversation(between: me.id, and: request.from.id, in: transaction)
            try transaction.friends.addFriendship(
                between: me.id, and: request.from.id, conversationID: conversationID, at: transaction.timestamp)
            try transaction.appendEvent(.friendAccepted, to: [request.from.id, me.id], conversationID: conversationID)
            return Friend(user: request.from, conversationId: conversationID, since: transaction.timestamp)
        }
    }

    func decline(_ requestID: String, by principal: Principal) async throws -> FriendRequest {
        try await settle(requestID, by: principal, role: .recipient, state: .declined)
    }

    func cancel(_ requestID: String, by principal: Principal) async throws {
        _ = try await settle(requestID, by: principal, role: .sender, state: .cancelled)
    }

    private func settle(
        _ requestID: String, by principal: Principal, role: Role, state: FriendRequestState
    ) async throws -> FriendRequest {
        let userID = principal.user.id
        return try await store.write { transaction in
            var request = try Self.pending(requestID, for: userID, role: role, in: transaction.friends)
            try Self.settle(requestID, as: state, in: transaction)
            try transaction.appendEvent(.friendRequest, to: [request.from.id, request.to.id])
            request.state = state
            request.updatedAt = transaction.timestamp
            return request
        }
    }

    func friends(of principal: Principal) async throws -> [Friend] {
        let userID = principal.user.id
        return try await store.snapshot { try $0.friends.friends(of: userID) }
    }

    /// Ends the friendship; the conversation and its history stay.
    func removeFriend(_ friendID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        let friendship = try await store.snapshot { try $0.friends.friendship(between: userID, and: friendID) }
        guard friendship != nil else { throw APIError.notFound("not a friend") }
        let channels = calls.push, withdraw = calls.media.managesRooms
        let notices = try await store.write { transaction in
            guard let friendship = try transaction.friends.friendship(between: userID, and: friendID) else {
                throw APIError.notFound("not a friend")
            }
            try transaction.friends.removeFriendship(between: userID, and: friendID)
            try LiveLocationService.endAll(
                in: .conversation(friendship.conversationID), telling: [friendID, userID], in: transaction)
            let notices = try CallService.endLiveCall(
                scopeKind: .conversation, scopeID: friendship.conversationID, reason: .unfriended, channels: channels,
                withdrawMedia: withdraw,
                in: transaction)
            try transaction.appendEvent(
                .friendRemoved, to: [friendID, userID], conversationID: friendship.conversationID)
            return notices
        }
        if notices > 0 { calls.pushesQueued() }
    }

    /// The pair's conversation id, if they have one.
    private func conversation(_ a: String, _ b: String) async throws -> String? {
        try await store.snapshot { try $0.friends.conversationID(between: a, and: b) }
    }

    func blocks(of principal: Principal) async throws -> [Block] {
        let userID = principal.user.id
        return try await store.snapshot { try $0.friends.blocks(by: userID) }
    }

    /// Blocks `targetID` (idempotent). Pending requests between the two are cancelled; the
    /// friendship and the shared history stay, but no new interaction is possible.
    func block(_ targetID: String, by principal: Principal) async throws -> Block {
        let userID = principal.user.id
        let alreadyBlocked = try await store.snapshot {
            try $0.friends.blockedAt(blocker: userID, blocked: targetID) != nil
        }
        let conversationID = targetID == userID ? nil : try await conversation(userID, targetID)
        let channels = calls.push, withdraw = calls.media.managesRooms
        // Ending a live call writes notices and media jobs: their workers are woken (a block is rare).
        defer {
            if conversationID != nil, !alreadyBlocked {
                calls.pushesQueued()
            }
        }
        return try await store.write { transaction in
            let friends = transaction.friends
            guard let target = try transaction.accounts.user(id: targetID) else {
                throw APIError.notFound("no such user")
            }
            guard target.id != userID else {
                throw APIError(.cannotBlockSelf, "you cannot block yourself")
            }
            if let since = try friends.blockedAt(blocker: userID, blocked: targetID) {
                return Block(user: target, createdAt: since)
            }
            try friends.addBlock(blocker: userID, blocked: targetID, at: transaction.timestamp)
            let cancelled = try friends.cancelPendingRequests(between: userID, and: targetID, at: transaction.timestamp)
            if cancelled > 0 { try transaction.appendEvent(.friendRequest, to: [userID, targetID]) }
            if let conversationID {
                try LiveLocationService.endAll(
                    in: .conversation(conversationID), telling: [userID, targetID], in: transaction)
                try CallService.endLiveCall(
                    scopeKind: .conversation, scopeID: conversationID, reason: .blocked, channels: channels,
                    withdrawMedia: withdraw, in: transaction)
            }
            try transaction.appendEvent(
                .blockChanged, to: [userID, targetID],
                conversationID: try friends.friendship(between: userID, and: targetID)?.conversationID)
            return Block(user: target, createdAt: transaction.timestamp)
        }
    }

    /// Lifts a block (idempotent).
    func unblock(_ targetID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        _ = try await store.write { transaction in
            guard try transaction.accounts.user(id: targetID) != nil else { throw APIError.notFound("no such user") }
            if try transaction.friends.removeBlock(blocker: userID, blocked: targetID) {
                let conversationID = try transaction.friends.friendship(between: userID, and: targetID)?.conversationID
                try transaction.appendEvent(.blockChanged, to: [userID, targetID], conversationID: conversationID)
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
    private static func pending(
        _ requestID: String, for userID: String, role: Role, in friends: any FriendRepository
    ) throws -> FriendRequest {
        guard let request = try friends.request(requestID),
            request.from.id == userID || request.to.id == userID
        else { throw APIError.notFound("no such friend request") }
        switch role {
        case .recipient where request.to.id != userID:
            throw APIError(.forbidden, "only the recipient can answer a friend request")
        case .sender where request.from.id != userID:
            throw APIError(.forbidden, "only the sender can cancel a friend request")
        default: break
        }
        guard request.state == .pending else {
            throw APIError(.requestNotPending, "the request is already \(request.state)")
        }
        return request
    }

    private static func settle(
        _ requestID: String, as state: FriendRequestState, in transaction: WriteTransaction
    ) throws {
        try transaction.friends.settleRequest(requestID, as: state, at: transaction.timestamp)
    }
}
