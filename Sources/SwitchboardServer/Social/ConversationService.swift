import SwitchboardStore
import SwitchboardWire

/// 1:1 conversations: listing, messages and read markers. Only the two participants see a
/// conversation (404 for anyone else); sending needs a friendship and no block (403).
struct ConversationService: Sendable {
    let store: ServerStore

    func list(for principal: Principal) async throws -> [Conversation] {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            try snapshot.friends.conversationIDs(of: userID).map {
                try Self.conversation($0, for: userID, in: snapshot)
            }
        }
    }

    func get(_ conversationID: String, for principal: Principal) async throws -> Conversation {
        let userID = principal.user.id
        return try await store.snapshot { try Self.conversation(conversationID, for: userID, in: $0) }
    }

    func send(
        _ request: SendMessage, to conversationID: String, from principal: Principal
    ) async throws -> (Message, isNew: Bool) {
        let userID = principal.user.id
        return try await store.write { transaction in
            let peer = try SocialQueries.conversationPeer(conversationID, of: userID, in: transaction)
            if let stored = try MessageStore.replay(
                request, in: .conversation(conversationID), from: userID, messages: transaction.messages)
            {
                return (stored, false)
            }
            try Self.requireInteraction(userID, peer, in: transaction)
            try transaction.requireQuota(
                ServerLimits.messageKey(userID), transaction.limits.messagesPerUser, what: "messages")
            let message = try MessageStore.insert(
                request, in: .conversation(conversationID), from: userID, transaction: transaction)
            try transaction.appendEvent(
                .message, to: [peer, userID], conversationID: conversationID, messageID: message.id)
            return (message, true)
        }
    }

    func messages(
        in conversationID: String, before: String?, limit: String?, for principal: Principal
    ) async throws -> MessagePage {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            _ = try SocialQueries.conversationPeer(conversationID, of: userID, in: snapshot)
            return try MessageStore.page(
                in: .conversation(conversationID), before: before, limit: try MessageStore.limit(limit),
                messages: snapshot.messages)
        }
    }

    /// Reading needs no friendship: blocking hides nothing already shared.
    func markRead(_ request: MarkRead, in conversationID: String, by principal: Principal) async throws -> ReadMarker {
        let userID = principal.user.id
        return try await store.write { transaction in
            let peer = try SocialQueries.conversationPeer(conversationID, of: userID, in: transaction)
            let (marker, moved) = try MessageStore.markRead(
                request.messageId, in: .conversation(conversationID), by: userID, transaction: transaction)
            if moved {
                try transaction.appendEvent(
                    .messageRead, to: [peer, userID], conversationID: conversationID, messageID: marker.messageId)
            }
            return marker
        }
    }

    /// 403 unless the two are friends and neither blocked the other.
    static func requireInteraction(_ a: String, _ b: String, in repositories: any Repositories) throws {
        if try SocialQueries.isBlocked(a, b, in: repositories) {
            throw APIError(.blocked, "one of you has blocked the other")
        }
        if try SocialQueries.friendship(a, b, in: repositories) == nil {
            throw APIError(.notFriends, "you are no longer friends")
        }
    }

    static func conversation(
        _ conversationID: String, for userID: String, in repositories: any Repositories
    ) throws -> Conversation {
        let peerID = try SocialQueries.conversationPeer(conversationID, of: userID, in: repositories)
        guard let peer = try SocialQueries.user(peerID, in: repositories),
            let createdAt = try repositories.friends.conversation(conversationID)?.createdAt
        else { throw APIError.notFound("no such conversation") }
        let isFriend = try SocialQueries.friendship(userID, peerID, in: repositories) != nil
        let blocked = try SocialQueries.isBlocked(userID, peerID, in: repositories)
        return Conversation(
            id: conversationID, peer: peer, isFriend: isFriend, canInteract: isFriend && !blocked, createdAt: createdAt,
            readMarkers: try repositories.messages.readMarkers(in: .conversation(conversationID)))
    }
}
