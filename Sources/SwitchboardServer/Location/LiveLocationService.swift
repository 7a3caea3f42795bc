import Foundation
import SwitchboardCore
import SwitchboardStore
import SwitchboardWire

/// Live-location sharing in conversations and groups (SPEC §9). A conversation needs the two
/// to be friends without a block (403 otherwise) to start or move a share; a group needs
/// membership (404 for anyone else, who cannot see it). Reading and stopping need only to see
/// the scope. A share ends by itself `durationSeconds` after it started, when its owner stops
/// it, or when the scope is lost (unfriending, a block, leaving or removal, dissolution). Every
/// change writes `live_location_changed` to the scope's participants in its transaction.
struct LiveLocationService: Sendable {
    let store: ServerStore

    static let defaultDuration = 3600
    static let durationRange = 60...28_800

    /// Starts sharing, or starts again from now when a share runs (`startedAt` kept); true
    /// when the share is new.
    func start(
        _ request: StartLiveLocation, in scope: MessageScope, by principal: Principal
    ) async throws -> (LiveLocation, isNew: Bool) {
        let position = try Self.validated(
            latitude: request.latitude, longitude: request.longitude, accuracy: request.accuracy)
        let duration = request.durationSeconds ?? Self.defaultDuration
        guard Self.durationRange.contains(duration) else {
            throw APIError.validation(
                "'durationSeconds' must be an integer from \(Self.durationRange.lowerBound) to \(Self.durationRange.upperBound)",
                field: "durationSeconds")
        }
        let userID = principal.user.id
        return try await store.write { transaction in
            let participants = try Self.participants(of: scope, for: userID, changing: true, in: transaction)
            try transaction.requireQuota(
                ServerLimits.liveLocationKey(userID), transaction.limits.liveLocationUpdatesPerUser,
                what: "live-location updates")
            let nowMS = CallStore.milliseconds(transaction.date)
            let running = try transaction.liveLocations.share(in: scope, of: userID).flatMap {
                $0.expiresAtMS > nowMS ? $0 : nil
            }
            // Started again, a share still ends at most 8 h after it first began.
            let startedAt = running.flatMap { Timestamp.date($0.startedAt) } ?? transaction.date
            let expires = min(
                transaction.date.addingTimeInterval(TimeInterval(duration)),
                startedAt.addingTimeInterval(TimeInterval(Self.durationRange.upperBound)))
            let share = StoredLiveLocation(
                scope: scope, userID: userID, latitude: position.latitude, longitude: position.longitude,
                accuracy: position.accuracy,
                startedAt: running?.startedAt ?? transaction.timestamp, updatedAt: transaction.timestamp,
                expiresAt: Timestamp.iso8601(expires), expiresAtMS: CallStore.milliseconds(expires))
            try transaction.liveLocations.save(share)
            try Self.announce(in: scope, to: participants, in: transaction)
            return (share.wire, running == nil)
        }
    }

    /// Moves a running share: 409 `NOT_SHARING` when none runs. Its end stays where it was.
    func update(
        _ request: UpdateLiveLocation, in scope: MessageScope, by principal: Principal
    ) async throws -> LiveLocation {
        let position = try Self.validated(
            latitude: request.latitude, longitude: request.longitude, accuracy: request.accuracy)
        let userID = principal.user.id
        return try await store.write { transaction in
            let participants = try Self.participants(of: scope, for: userID, changing: true, in: transaction)
            try transaction.requireQuota(
                ServerLimits.liveLocationKey(userID), transaction.limits.liveLocationUpdatesPerUser,
                what: "live-location updates")
            let nowMS = CallStore.milliseconds(transaction.date)
            guard var share = try transaction.liveLocations.share(in: scope, of: userID), share.expiresAtMS > nowMS
            else {
                throw APIError(.notSharing, "you are not sharing your location here: start sharing first")
            }
            share.latitude = position.latitude
            share.longitude = position.longitude
            share.accuracy = position.accuracy
            share.updatedAt = transaction.timestamp
            try transaction.liveLocations.save(share)
            try Self.announce(in: scope, to: participants, in: transaction)
            return share.wire
        }
    }

    /// The scope's running shares, by user id.
    func list(in scope: MessageScope, for principal: Principal) async throws -> LiveLocationList {
        let userID = principal.user.id, environment = store.environment
        return try await store.snapshot { snapshot in
            let now = CallStore.milliseconds(environment.now())
            _ = try Self.participants(of: scope, for: userID, changing: false, in: snapshot)
            return LiveLocationList(
                liveLocations: try snapshot.liveLocations.shares(in: scope, runningAt: now).map(\.wire))
        }
    }

    /// Stops the caller's share (idempotent: nothing to stop is fine).
    func stop(in scope: MessageScope, by principal: Principal) async throws {
        let userID = principal.user.id
        try await store.write { transaction in
            let participants = try Self.participants(of: scope, for: userID, changing: false, in: transaction)
            if try transaction.liveLocations.remove(in: scope, of: userID) {
                try Self.announce(in: scope, to: participants, in: transaction)
            }
        }
    }

    /// The caller's running shares anywhere, oldest first (what an app restores after a restart).
    func mine(for principal: Principal) async throws -> LiveLocationList {
        let userID = principal.user.id, environment = store.environment
        return try await store.snapshot {
            LiveLocationList(
                liveLocations: try $0.liveLocations.shares(
                    of: userID, runningAt: CallStore.milliseconds(environment.now())
                ).map(\.wire))
        }
    }

    /// Ends the shares that reached their end; returns how many. A look first, so a server
    /// with nothing due writes nothing.
    @discardableResult
    func sweepExpired(limit: Int = 500) async throws -> Int {
        let now = CallStore.milliseconds(store.environment.now())
        guard try await store.snapshot({ try $0.liveLocations.anyExpired(at: now) }) else { return 0 }
        return try await store.write { transaction in
            let ended = try transaction.liveLocations.removeExpired(
                at: CallStore.milliseconds(transaction.date), limit: limit)
            for scope in Set(ended.map(\.scope)) {
                try Self.announce(in: scope, to: try Self.everyone(in: scope, in: transaction), in: transaction)
            }
            return ended.count
        }
    }

    // MARK: Ends that social changes cause (inside their transactions)

    /// Ends every share in the scope (unfriending, a block, a dissolved group), telling `participants`.
    static func endAll(in scope: MessageScope, telling participants: [String], in transaction: WriteTransaction) throws
    {
        if try transaction.liveLocations.removeAll(in: scope) > 0 {
            try announce(in: scope, to: participants, in: transaction)
        }
    }

    /// Ends one user's share in a group they are leaving, telling `members` (the group's, the user included).
    static func end(
        for userID: String, inGroup groupID: String, telling members: [String], in transaction: WriteTransaction
    ) throws {
        if try transaction.liveLocations.remove(in: .group(groupID), of: userID) {
            try announce(in: .group(groupID), to: members, in: transaction)
        }
    }

    // MARK: Helpers

    /// Who hears of the scope's changes; 404 when `userID` cannot see the scope, and with
    /// `changing`, 403 for a conversation whose two are not friends or have a block.
    static func participants(
        of scope: MessageScope, for userID: String, changing: Bool, in repositories: any Repositories
    ) throws -> [String] {
        switch scope {
        case .conversation(let id):
            let peer = try SocialQueries.conversationPeer(id, of: userID, in: repositories)
            if changing { try ConversationService.requireInteraction(userID, peer, in: repositories) }
            return [peer, userID]
        case .group(let id):
            _ = try SocialQueries.group(id, visibleTo: userID, in: repositories)
            return try SocialQueries.memberIDs(of: id, in: repositories)
        }
    }

    /// Everyone who sees the scope now (for a sweep, which acts for nobody in particular).
    private static func everyone(in scope: MessageScope, in repositories: any Repositories) throws -> [String] {
        switch scope {
        case .conversation(let id):
            guard let conversation = try repositories.friends.conversation(id) else { return [] }
            return [conversation.userA, conversation.userB]
        case .group(let id):
            return try SocialQueries.memberIDs(of: id, in: repositories)
        }
    }

    private static func announce(in scope: MessageScope, to userIDs: [String], in transaction: WriteTransaction) throws
    {
        guard !userIDs.isEmpty else { return }
        try transaction.appendEvent(
            .liveLocationChanged, to: userIDs, conversationID: scope.conversationID, groupID: scope.groupID)
    }

    /// A position: finite numbers in range, each field named when it is not.
    static func validated(
        latitude: Double, longitude: Double, accuracy: Double
    ) throws(APIError) -> (latitude: Double, longitude: Double, accuracy: Double) {
        func check(_ value: Double, _ field: String, _ range: ClosedRange<Double>, _ unit: String) throws(APIError) {
            guard value.isFinite else { throw APIError.validation("'\(field)' must be a finite number", field: field) }
            guard range.contains(value) else {
                throw APIError.validation(
                    "'\(field)' must be from \(Int(range.lowerBound)) to \(Int(range.upperBound)) \(unit)", field: field
                )
            }
        }
        try check(latitude, "latitude", -90...90, "degrees")
        try check(longitude, "longitude", -180...180, "degrees")
        try check(accuracy, "accuracy", 0...100_000, "metres")
        // −0 is stored and answered as 0.
        return (latitude + 0, longitude + 0, accuracy + 0)
    }
}
