import SwitchboardPush
import SwitchboardStore
import SwitchboardWire

/// Groups: an owner and members. Only members see a group (404 otherwise); only the owner
/// renames it, adds or removes members, or dissolves it (403 for other members).
struct GroupService: Sendable {
    let store: ServerStore
    let calls: CallService
    static let maxMembers = 10_000

    func create(_ request: CreateGroup, by principal: Principal) async throws -> Group {
        let owner = principal.user.id
        let name = try AccountValidation.text(request.name, field: "name", maxLength: 100)
        return try await store.write { transaction in
            let memberIDs = try Self.checkedNewMembers(
                request.memberIds, field: "memberIds", for: owner, existing: [owner], in: transaction)
            let groupID = transaction.newID()
            let groups = transaction.groups
            try groups.createGroup(id: groupID, name: name, ownerID: owner, at: transaction.timestamp)
            for userID in [owner] + memberIDs { try groups.addMember(userID, to: groupID, at: transaction.timestamp) }
            try transaction.appendEvent(.groupMembersChanged, to: [owner] + memberIDs, groupID: groupID)
            return try Self.group(groupID, for: owner, in: transaction)
        }
    }

    func list(for principal: Principal) async throws -> [Group] {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            try snapshot.groups.groupIDs(of: userID).map { try Self.group($0, for: userID, in: snapshot) }
        }
    }

    func get(_ groupID: String, for principal: Principal) async throws -> Group {
        let userID = principal.user.id
        return try await store.snapshot { try Self.group(groupID, for: userID, in: $0) }
    }

    func rename(_ groupID: String, to request: RenameGroup, by principal: Principal) async throws -> Group {
        let userID = principal.user.id
        return try await store.write { transaction in
            try Self.requireOwner(groupID, userID, in: transaction)
            let name = try AccountValidation.text(request.name, field: "name", maxLength: 100)
            try transaction.groups.rename(groupID, to: name)
            try transaction.appendEvent(.groupChanged, toMembersOf: groupID)
            return try Self.group(groupID, for: userID, in: transaction)
        }
    }

    func addMembers(_ request: AddGroupMembers, to groupID: String, by principal: Principal) async throws -> Group {
        let userID = principal.user.id
        return try await store.write { transaction in
            try Self.requireOwner(groupID, userID, in: transaction)
            let existing = try SocialQueries.memberIDs(of: groupID, in: transaction)
            let added = try Self.checkedNewMembers(
                request.userIds, field: "userIds", for: userID, existing: Set(existing), in: transaction)
            for member in added { try transaction.groups.addMember(member, to: groupID, at: transaction.timestamp) }
            if !added.isEmpty {
                try transaction.appendEvent(.groupMembersChanged, to: existing + added, groupID: groupID)
            }
            return try Self.group(groupID, for: userID, in: transaction)
        }
    }

    /// The owner removes a member (the owner cannot be removed: dissolve the group instead).
    func removeMember(_ memberID: String, from groupID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        try await store.snapshot { snapshot in
            try Self.requireOwner(groupID, userID, in: snapshot)
            guard memberID != userID else { return }
            guard try SocialQueries.memberIDs(of: groupID, in: snapshot).contains(memberID) else {
                throw APIError.notFound("not a member of this group")
            }
        }
        let channels = calls.push, withdraw = calls.media.managesRooms
        let notices = try await store.write { transaction in
            try Self.requireOwner(groupID, userID, in: transaction)
            guard memberID != userID else {
                throw APIError(.cannotRemoveOwner, "the owner cannot be removed; dissolve the group instead")
            }
            return try Self.removeMember(
                memberID, from: groupID, channels: channels, withdrawMedia: withdraw, in: transaction)
        }
        if notices > 0 { calls.pushesQueued() }
    }

    /// A member leaves (the owner cannot: dissolve the group instead).
    func leave(_ groupID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        let channels = calls.push, withdraw = calls.media.managesRooms
        let notices = try await store.write { transaction in
            let group = try SocialQueries.group(groupID, visibleTo: userID, in: transaction)
            guard group.ownerID != userID else {
                throw APIError(.ownerCannotLeave, "the owner cannot leave; dissolve the group instead")
            }
            return try Self.removeMember(
                userID, from: groupID, channels: channels, withdrawMedia: withdraw, in: transaction)
        }
        if notices > 0 { calls.pushesQueued() }
    }

    /// The owner dissolves the group: it disappears for everyone, who are told by `group_changed`.
    func dissolve(_ groupID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        try await store.snapshot { try Self.requireOwner(groupID, userID, in: $0) }
        let channels = calls.push, withdraw = calls.media.managesRooms
        let notices = try await store.write { transaction in
            try Self.requireOwner(groupID, userID, in: transaction)
            let members = try SocialQueries.memberIDs(of: groupID, in: transaction)
            let notices = try CallService.endLiveCall(
                scopeKind: .group, scopeID: groupID, reason: .groupDissolved, channels: channels,
                withdrawMedia: withdraw, in: transaction)
            try LiveLocationService.endAll(in: .group(groupID), telling: members, in: transaction)
            try transaction.e2ee.dropScope(.group(groupID))
            try transaction.groups.dissolve(groupID, at: transaction.timestamp)
            try transaction.appendEvent(.groupChanged, to: members, groupID: groupID)
            return notices
        }
        if notices > 0 { calls.pushesQueued() }
    }

    func send(
        _ request: SendMessage, to groupID: String, from principal: Principal
    ) async throws -> (Message, isNew: Bool) {
        let userID = principal.user.id
        return try await store.write { transaction in
            // A retry gets its own stored message back even after losing the group: it reveals
            // nothing the sender did not already have.
            if let stored = try MessageStore.replay(
                request, in: .group(groupID), from: userID, messages: transaction.messages)
            {
                return (stored, false)
            }
            _ = try SocialQueries.group(groupID, visibleTo: userID, in: transaction)
            try transaction.requireQuota(
                ServerLimits.messageKey(userID), transaction.limits.messagesPerUser, what: "messages")
            let message = try MessageStore.insert(request, in: .group(groupID), from: userID, transaction: transaction)
            try transaction.appendEvent(.groupMessage, toMembersOf: groupID, messageID: message.id)
            return (message, true)
        }
    }

    func messages(
        in groupID: String, before: String?, limit: String?, for principal: Principal
    ) async throws -> MessagePage {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            _ = try SocialQueries.group(groupID, visibleTo: userID, in: snapshot)
            return try MessageStore.page(
                in: .group(groupID), before: before, limit: try MessageStore.limit(limit), messages: snapshot.messages)
        }
    }

    func markRead(_ request: MarkRead, in groupID: String, by principal: Principal) async throws -> ReadMarker {
        let userID = principal.user.id
        return try await store.write { transaction in
            _ = try SocialQueries.group(groupID, visibleTo: userID, in: transaction)
            let (marker, moved) = try MessageStore.markRead(
                request.messageId, in: .group(groupID), by: userID, transaction: transaction)
            if moved {
                try transaction.appendEvent(.groupMessageRead, toMembersOf: groupID, messageID: marker.messageId)
            }
            return marker
        }
    }

    // MARK: Helpers

    private static func requireOwner(_ groupID: String, _ userID: String, in repositories: any Repositories) throws {
        let group = try SocialQueries.group(groupID, visibleTo: userID, in: repositories)
        guard group.ownerID == userID else {
            throw APIError(.notGroupOwner, "only the group's owner can do this")
        }
    }

    /// Returns how many notices the call's change wrote.
    private static func removeMember(
        _ memberID: String, from groupID: String, channels: PushChannels, withdrawMedia: Bool,
        in transaction: WriteTransaction
    ) throws -> Int {
        let members = try SocialQueries.memberIDs(of: groupID, in: transaction)
        guard members.contains(memberID) else { throw APIError.notFound("not a member of this group") }
        let notices = try CallService.removeFromLiveCall(
            groupID: groupID, userID: memberID, channels: channels, withdrawMedia: withdrawMedia, in: transaction)
        try LiveLocationService.end(for: memberID, inGroup: groupID, telling: members, in: transaction)
        // Ciphertext still queued for the leaver's devices is of no use to them now.
        try transaction.e2ee.dropItems(ofUser: memberID, in: .group(groupID))
        try transaction.groups.removeMember(memberID, from: groupID)
        try transaction.appendEvent(.groupMembersChanged, to: members, groupID: groupID)
        return notices
    }

    /// New members must exist, be friends of the adder and not blocked either way; duplicates
    /// and existing members are dropped.
    private static func checkedNewMembers(
        _ ids: [String], field: String, for adder: String, existing: Set<String>, in repositories: any Repositories
    ) throws -> [String] {
        var seen = existing
        var result: [String] = []
        for id in ids where seen.insert(id).inserted {
            guard try SocialQueries.user(id, in: repositories) != nil else {
                throw APIError(.notFound, "no such user: \(id)", field: field)
            }
            if try SocialQueries.isBlocked(adder, id, in: repositories) {
                throw APIError(.blocked, "you and \(id) have a block between you", field: field)
            }
            guard try SocialQueries.friendship(adder, id, in: repositories) != nil else {
                throw APIError(.notFriends, "only friends can be added: \(id)", field: field)
            }
            result.append(id)
        }
        guard existing.count + result.count <= maxMembers else {
            throw APIError.validation("a group has at most \(maxMembers) members", field: field)
        }
        return result
    }

    static func group(_ groupID: String, for userID: String, in repositories: any Repositories) throws -> Group {
        let row = try SocialQueries.group(groupID, visibleTo: userID, in: repositories)
        let members = try repositories.groups.members(of: groupID)
        return Group(
            id: groupID, name: row.name, ownerId: row.ownerID, createdAt: row.createdAt, members: members,
            readMarkers: try repositories.messages.readMarkers(in: .group(groupID)))
    }
}
