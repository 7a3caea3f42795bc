import Foundation
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardWire

/// Scheduled group calls (meetings) and their pre-authorisations.
///
/// A member schedules a call of the group for a start time; every member is told with
/// `scheduled_call_changed` (also when it is cancelled, and when a group call starts it: the
/// first group call created from 30 minutes before its start until an hour after). Ahead of
/// the start a member's phone asks for a pre-authorisation: a random token, single use, valid
/// 10 minutes, bound to the member and the scheduled call. A join of the call that started it
/// redeems the token and carries the media token in its answer, without a second round trip;
/// any other token (expired, used, another user's or call's) leaves the join as it was.
struct ScheduledCallService: Sendable {
    let store: ServerStore

    /// How long a pre-authorisation is valid.
    static let preauthorizationSeconds: Double = 600
    /// A group call created this long before a scheduled start, up to `lateLinkSeconds` after it, starts it.
    static let earlyLinkSeconds: Double = 30 * 60
    static let lateLinkSeconds: Double = 60 * 60
    /// Listed (and pre-authorisable) until this long after the start.
    static let listedAfterStartSeconds: Double = 60 * 60
    /// The furthest ahead a call may be scheduled.
    static let maximumAheadSeconds: Double = 366 * 86_400
    /// Upcoming scheduled calls a group may hold.
    static let maximumPerGroup = 100

    // MARK: Scheduling

    func schedule(
        _ request: ScheduleCall, inGroup groupID: String, by principal: Principal
    ) async throws -> ScheduledCall {
        guard request.mode == .audio || request.mode == .video else {
            throw APIError.validation("'mode' must be 'audio' or 'video'", field: "mode")
        }
        guard let startsAt = Timestamp.date(request.startsAt) else {
            throw APIError.validation(
                "'startsAt' must be an ISO-8601 date and time with a time zone", field: "startsAt")
        }
        let title = try request.title.map { text throws(APIError) in
            try AccountValidation.text(text, field: "title", maxLength: 100)
        }
        let userID = principal.user.id
        return try await store.write { transaction in
            _ = try SocialQueries.group(groupID, visibleTo: userID, in: transaction)
            let now = transaction.date
            guard startsAt > now, startsAt.timeIntervalSince(now) <= Self.maximumAheadSeconds else {
                throw APIError.validation("'startsAt' must be in the future, at most a year ahead", field: "startsAt")
            }
            let repository = transaction.scheduledCalls
            guard
                try repository.upcoming(inGroup: groupID, from: CallStore.milliseconds(now)).count
                    < Self.maximumPerGroup
            else {
                throw APIError(
                    .scheduledCallsFull, "the group has \(Self.maximumPerGroup) upcoming scheduled calls already")
            }
            let stored = StoredScheduledCall(
                id: transaction.newID(), groupID: groupID, title: title, mode: request.mode.rawValue,
                startsAtMS: CallStore.milliseconds(startsAt),
                createdBy: userID, createdAt: transaction.timestamp, callID: nil, cancelledAt: nil)
            try repository.insert(stored)
            try transaction.appendEvent(.scheduledCallChanged, toMembersOf: groupID)
            return Self.answer(stored)
        }
    }

    /// Cancels a scheduled call: its creator or the group's owner may (idempotent).
    func cancel(_ id: String, inGroup groupID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        try await store.write { transaction in
            let group = try SocialQueries.group(groupID, visibleTo: userID, in: transaction)
            guard let stored = try transaction.scheduledCalls.scheduledCall(id), stored.groupID == groupID else {
                throw APIError(.notFound, "no such scheduled call in this group")
            }
            guard stored.createdBy == userID || group.ownerID == userID else {
                throw APIError(.forbidden, "only who scheduled the call or the group's owner can cancel it")
            }
            guard stored.cancelledAt == nil else { return }
            try transaction.scheduledCalls.cancel(id, at: transaction.timestamp)
            try transaction.appendEvent(.scheduledCallChanged, toMembersOf: groupID)
        }
    }

    func upcoming(inGroup groupID: String, for principal: Principal) async throws -> ScheduledCallList {
        let environment = store.environment
        return try await store.snapshot { snapshot in
            _ = try SocialQueries.group(groupID, visibleTo: principal.user.id, in: snapshot)
            let from = CallStore.milliseconds(environment.now().addingTimeInterval(-Self.listedAfterStartSeconds))
            return ScheduledCallList(
                scheduledCalls: try snapshot.scheduledCalls.upcoming(inGroup: groupID, from: from).map(Self.answer))
        }
    }

    func upcoming(for principal: Principal, limit: String?) async throws -> ScheduledCallList {
        let count: Int
        if let limit {
            guard let value = Int(limit), (1...50).contains(value) else {
                throw APIError.validation("'limit' must be 1 to 50", field: "limit")
            }
            count = value
        } else {
            count = 20
        }
        let environment = store.environment
        return try await store.snapshot { snapshot in
            let from = CallStore.milliseconds(environment.now().addingTimeInterval(-Self.listedAfterStartSeconds))
            return ScheduledCallList(
                scheduledCalls: try snapshot.scheduledCalls.upcoming(
                    forMember: principal.user.id, from: from, limit: count
                ).map(Self.answer))
        }
    }

    // MARK: Pre-authorisations

    func preauthorize(_ id: String, for principal: Principal) async throws -> CallPreauthorization {
        let userID = principal.user.id
        let token = Token.generate()
        return try await store.write { transaction in
            guard let stored = try transaction.scheduledCalls.scheduledCall(id) else {
                throw APIError(.notFound, "no such scheduled call in your groups")
            }
            _ = try SocialQueries.group(stored.groupID, visibleTo: userID, in: transaction)  // 404 for a non-member
            let now = transaction.date
            var ended =
                stored.cancelledAt != nil
                || Double(CallStore.milliseconds(now) - stored.startsAtMS) / 1000 > Self.listedAfterStartSeconds
            if let callID = stored.callID, let call = try transaction.calls.load(callID)?.call, call.state == .ended {
                ended = true
            }
            guard !ended else {
                throw APIError(.scheduledCallEnded, "the scheduled call was cancelled or is over")
            }
            let expires = now.addingTimeInterval(Self.preauthorizationSeconds)
            try transaction.scheduledCalls.insertPreauthorization(
                tokenHash: token.hash, scheduledCallID: id, userID: userID, expiresAtMS: CallStore.milliseconds(expires)
            )
            return CallPreauthorization(token: token.text, scheduledCallId: id, expiresAt: Timestamp.iso8601(expires))
        }
    }

    /// Redeems `text` for `userID` joining `callID`: true when it was a valid pre-authorisation
    /// of theirs for the scheduled call that call started, now used.
    static func redeem(
        _ text: String, by userID: String, joining callID: String, in store: ServerStore
    ) async throws -> Bool {
        guard let token = Token(text) else { return false }
        return try await store.write { transaction in
            try transaction.scheduledCalls.redeem(
                tokenHash: token.hash, userID: userID, callID: callID, nowMS: CallStore.milliseconds(transaction.date),
                at: transaction.timestamp)
        }
    }

    /// In the transaction that creates a group call: the scheduled call it starts, if any,
    /// linked to it and announced.
    static func link(callID: String, inGroup groupID: String, in transaction: WriteTransaction) throws {
        let now = CallStore.milliseconds(transaction.date)
        let linked = try transaction.scheduledCalls.link(
            callID: callID, inGroup: groupID, nowMS: now,
            startsWithin: now - Int64(lateLinkSeconds * 1000), now + Int64(earlyLinkSeconds * 1000))
        if linked != nil { try transaction.appendEvent(.scheduledCallChanged, toMembersOf: groupID) }
    }

    func prune() async throws -> Int {
        try await store.write { transaction in
            try transaction.scheduledCalls.prunePreauthorizations(
                expiredBefore: CallStore.milliseconds(transaction.date))
        }
    }

    // MARK: Helpers

    static func answer(_ stored: StoredScheduledCall) -> ScheduledCall {
        ScheduledCall(
            id: stored.id, groupId: stored.groupID, title: stored.title, mode: CallMode(rawValue: stored.mode),
            startsAt: Timestamp.iso8601(milliseconds: stored.startsAtMS),
            createdBy: stored.createdBy, createdAt: stored.createdAt, callId: stored.callID)
    }
}

/// `/groups/{id}/scheduled-calls…` and `/scheduled-calls…`.
struct ScheduledCallRoutes {
    let service: ScheduledCallService
    let authenticator: Authenticator

    func register(in router: inout Router) {
        let auth = authenticator, service = self.service
        router.add(
            "POST", "/groups/{id}/scheduled-calls",
            auth.require { context, principal in
                .json(
                    try await service.schedule(
                        try context.decode(ScheduleCall.self), inGroup: context.parameter("id"), by: principal),
                    status: 201)
            })
        router.add(
            "GET", "/groups/{id}/scheduled-calls",
            auth.require { context, principal in
                .json(try await service.upcoming(inGroup: context.parameter("id"), for: principal))
            })
        router.add(
            "DELETE", "/groups/{id}/scheduled-calls/{scheduledCallId}",
            auth.require { context, principal in
                try await service.cancel(
                    context.parameter("scheduledCallId"), inGroup: context.parameter("id"), by: principal)
                return .noContent
            })
        router.add(
            "GET", "/scheduled-calls",
            auth.require { context, principal in
                .json(try await service.upcoming(for: principal, limit: context.request.queryParameters["limit"]))
            })
        router.add(
            "POST", "/scheduled-calls/{id}/preauthorization",
            auth.require { context, principal in
                .json(try await service.preauthorize(context.parameter("id"), for: principal), status: 201)
            })
    }
}
