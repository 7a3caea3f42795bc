import Foundation
import SwitchboardCore
import SwitchboardStore
import SwitchboardWire
import SwitchboardObservability
import SwitchboardPush

extension CallTransitionError {
    /// The refusal's code in the API's catalogue; its status is the code's own.
    var code: ErrorCode {
        switch self {
        case .notInvolved: .notFound
        case .notCaller: .notCaller
        case .notMember: .notMember
        case .invitationNotRinging: .invitationNotRinging
        case .callEnded: .callEnded
        case .callNotRinging: .callNotRinging
        case .callNotActive: .callNotActive
        case .notJoinable: .callNotJoinable
        case .notParticipant: .notParticipant
        case .alreadyParticipant: .alreadyParticipant
        case .busy: .callBusy
        }
    }

    var apiError: APIError { APIError(code, message) }
}

/// Calls: the I/O shell around `CallStateMachine`. Every transition is computed from a stored
/// version, its media work is done first (a failure answers 503 and changes nothing), and the
/// new state and its `call_changed` events commit together, only if nobody changed the call
/// meanwhile (otherwise it is computed again).
struct CallService: Sendable {
    let store: ServerStore
    let media: any MediaBackend
    let minter: MediaTokenMinter
    let ringTimeout: TimeInterval
    let emptyRoomGrace: TimeInterval
    /// The channels rings are written for (their payload builders).
    let push: PushChannels
    let logger: Logger
    /// Called after a commit that wrote push jobs, so the dispatcher starts at once.
    let pushesQueued: @Sendable () -> Void
    /// Opens the devices' VoIP payload keys for the rings (off without `dataEncryptionKey`).
    var payloadKeys = PayloadKeyVault(secret: nil)

    // MARK: Create

    func create(_ request: CreateCall, by principal: Principal) async throws -> (CallInfo, isNew: Bool) {
        guard let scopeKind = ScopeKind(knownRawValue: request.scopeKind.rawValue) else {
            throw APIError.validation("'scopeKind' must be 'conversation' or 'group'", field: "scopeKind")
        }
        guard let mode = CallMode(knownRawValue: request.mode.rawValue) else {
            throw APIError.validation("'mode' must be 'audio' or 'video'", field: "mode")
        }
        guard UUID(uuidString: request.clientId) != nil else {
            throw APIError.validation("'clientId' must be a UUID", field: "clientId")
        }
        let caller = principal.user.id
        let ringTimeout = self.ringTimeout, push = self.push, payloadKeys = self.payloadKeys
        do {
            let (info, isNew, pushes) = try await store.write { transaction in
                let calls = transaction.calls
                if let existing = try calls.call(createdBy: caller, clientID: request.clientId.lowercased()) {
                    let same =
                        existing.call.scopeKind == scopeKind && existing.call.scopeID == request.scopeId
                        && existing.call.mode == mode
                    guard same else {
                        throw APIError(.callBusy, "'clientId' was already used for a different call", field: "clientId")
                    }
                    return (CallStore.info(existing.call), false, 0)
                }
                let invitees = try Self.invitees(
                    scopeKind: scopeKind, scopeID: request.scopeId, caller: caller, in: transaction)
                guard !invitees.isEmpty else {
                    throw APIError(.nobodyToCall, "the group has no other members to ring")
                }
                let ringOnly = try Self.ringList(request.ring, invitees: invitees)
                if !(try calls.busyUsers([caller], excluding: nil)).isEmpty {
                    throw APIError(.callBusy, "you are already in a call")
                }
                if try calls.liveCallID(scopeKind: scopeKind, scopeID: request.scopeId) != nil {
                    throw APIError(.callBusy, "a call is already ringing or active here")
                }
                // The ring limits: calls per caller, and per caller and callee (or group).
                let limits = transaction.limits
                try transaction.rateCounters.require(
                    1,
                    [
                        (ServerLimits.callerKey(caller), limits.callsPerCaller),
                        (
                            ServerLimits.calleeKey(caller: caller, scope: "\(scopeKind.rawValue):\(request.scopeId)"),
                            limits.callsPerCallee
                        ),
                    ],
                    at: CallStore.milliseconds(transaction.date), what: "calls")
                let callID = transaction.newID()
                let transition = CallStateMachine.create(
                    id: callID, scopeKind: scopeKind, scopeID: request.scopeId, mode: mode, caller: caller,
                    invitees: invitees,
                    busy: try calls.busyUsers(invitees, excluding: nil), roomName: "call_\(callID)",
                    now: transaction.date,
                    ringTimeout: ringTimeout)
                try calls.insert(transition.call, clientID: request.clientId.lowercased())
                if scopeKind == .group {
                    try ScheduledCallService.link(callID: callID, inGroup: request.scopeId, in: transaction)
                }
                try transaction.appendEvent(.callChanged, to: transition.effects.notify, callID: callID)
                try Self.chronicle(from: nil, to: transition.call, in: transaction)
                // Same truth on both paths: the ring's pushes commit with its events.
                let pushes = try PushOutbox.enqueueRings(
                    for: transition, ringOnly: ringOnly, channels: push, keys: payloadKeys, in: transaction)
                return (CallStore.info(transition.call), true, pushes)
            }
            // The dispatcher is woken only for jobs it has to send: a ring to users without a
            // device would otherwise cost it a pass (a read) per call.
            if pushes > 0 { pushesQueued() }
            return (info, isNew)
        } catch let error as CallTransitionError {
            throw error.apiError
        }
    }

    /// Whose phones ring (``CallRing``): nil for every invitee; each listed id must be one of
    /// the invitees (the scope's other members), once.
    private static func ringList(_ ring: CallRing?, invitees: [String]) throws(APIError) -> Set<String>? {
        switch ring {
        case nil, .all?: return nil
        case .none?: return []
        case .only(let ids)?:
            let members = Set(invitees)
            var chosen: Set<String> = []
            for id in ids {
                let lowered = id.lowercased()
                guard members.contains(lowered), chosen.insert(lowered).inserted else {
                    throw APIError.validation(
                        "'ring' must be \"all\", \"none\" or a list of the other members' ids, each once", field: "ring"
                    )
                }
            }
            return chosen
        }
    }

    /// The other members of the scope, after checking the caller may call there.
    private static func invitees(
        scopeKind: ScopeKind, scopeID: String, caller: String, in repositories: any Repositories
    ) throws -> [String] {
        try requireScopeVisible(scopeKind, scopeID, caller, in: repositories)
        switch scopeKind {
        case .conversation:
            let peer = try SocialQueries.conversationPeer(scopeID, of: caller, in: repositories)
            try ConversationService.requireInteraction(caller, peer, in: repositories)
            return [peer]
        case .group:
            return try SocialQueries.memberIDs(of: scopeID, in: repositories).filter { $0 != caller }
        case .unknown:
            return []
        }
    }

    // MARK: Transitions by a user

    enum Action: String, Sendable {
        case accept, decline, join, leave, cancel
    }

    /// Performs `action`; with `mediaToken` (the routes pass it for accept and join) the answer
    /// carries a media token for the call's room as well, minted from the committed call.
    /// A join with a `preauthorization` still valid for the user and this call carries the
    /// media token too, and uses the pre-authorisation up.
    func perform(
        _ action: Action, on callID: String, by principal: Principal, mediaToken: Bool = false,
        preauthorization: String? = nil
    ) async throws -> (CallInfo, MediaToken?) {
        let userID = principal.user.id
        let call = try await transition(callID, visibleTo: userID, actingSession: principal.sessionID) {
            call, context throws(CallTransitionError) in
            switch action {
            case .accept:
                try CallStateMachine.accept(
                    call, by: userID, now: context.now, busyElsewhere: context.actorBusyElsewhere)
            case .decline: try CallStateMachine.decline(call, by: userID, now: context.now)
            case .join:
                try CallStateMachine.join(
                    call, by: userID, now: context.now, isMember: context.actorIsMember,
                    busyElsewhere: context.actorBusyElsewhere)
            case .leave: try CallStateMachine.leave(call, by: userID, now: context.now)
            case .cancel: try CallStateMachine.cancel(call, by: userID, now: context.now)
            }
        }
        var withMedia = mediaToken
        if action == .join, !withMedia, let preauthorization {
            withMedia = try await ScheduledCallService.redeem(preauthorization, by: userID, joining: callID, in: store)
        }
        return (CallStore.info(call), withMedia ? mint(for: userID, in: call) : nil)
    }

    struct Context: Sendable {
        let now: Date
        let actorBusyElsewhere: Bool
        let actorIsMember: Bool
    }

    typealias Decision = @Sendable (CallRecord, Context) throws(CallTransitionError) -> CallStateMachine.Transition?

    /// Computes a transition from the stored call, does its media work, and commits it if the
    /// call did not change meanwhile (else starts again, a few times). The rings it ends get
    /// their notices in the same transaction; `actingSession` is the session of the user who
    /// acted, whose device needs none.
    @discardableResult
    func transition(
        _ callID: String, visibleTo userID: String?, actingSession: String? = nil, _ decide: @escaping Decision
    ) async throws -> CallRecord {
        let channels = push
        for _ in 0..<5 {
            let (stored, context) = try await store.snapshot { snapshot -> (StoredCall?, Context) in
                let stored = try snapshot.calls.load(callID)
                var busy = false, member = false
                if let userID, let call = stored?.call {
                    busy = !(try snapshot.calls.busyUsers([userID], excluding: callID)).isEmpty
                    if call.scopeKind == .group {
                        member = (try? SocialQueries.group(call.scopeID, visibleTo: userID, in: snapshot)) != nil
                    }
                }
                return (stored, Context(now: store.environment.now(), actorBusyElsewhere: busy, actorIsMember: member))
            }
            guard let stored else { throw APIError.notFound("no such call") }
            if let userID, !stored.call.involvedUserIDs.contains(userID), !context.actorIsMember {
                throw APIError.notFound("no such call")
            }
            let transition: CallStateMachine.Transition?
            do {
                transition = try decide(stored.call, context)
            } catch {
                throw error.apiError
            }
            guard let transition else { return stored.call }
            let mediaFirst = !media.appliesAfterCommit
            if mediaFirst, !transition.effects.media.isEmpty {
                do {
                    try await media.perform(transition.effects.media)
                } catch {
                    logger.warning(
                        "media backend failed; call unchanged",
                        ["call.id": .string(callID), "error": .string(String(describing: error))])
                    throw APIError(.callMediaUnavailable, "the media server did not answer; nothing changed, try again")
                }
            }
            do {
                let (committed, notices) = try await store.write { transaction -> (Bool, Int) in
                    guard try transaction.calls.update(transition.call, from: stored.version) else { return (false, 0) }
                    try transaction.appendEvent(.callChanged, to: transition.effects.notify, callID: callID)
                    try Self.chronicle(from: stored.call, to: transition.call, in: transaction)
                    let notices = try PushOutbox.enqueueNotices(
                        from: stored.call, to: transition.call, actingSession: actingSession, channels: channels,
                        in: transaction)
                    return (true, notices)
                }
                if notices > 0 { pushesQueued() }
                if committed {
                    if !mediaFirst, !transition.effects.media.isEmpty {
                        do {
                            try await media.perform(transition.effects.media)
                        } catch {
                            logger.warning(
                                "media action after commit failed",
                                ["call.id": .string(callID), "error": .string(String(describing: error))])
                        }
                    }
                    return transition.call
                }
            } catch let error as CallTransitionError {
                throw error.apiError
            }
        }
        throw APIError(.callChanged, "the call kept changing; try again")
    }

    // MARK: Reads

    func get(_ callID: String, for principal: Principal) async throws -> CallInfo {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            guard let stored = try snapshot.calls.load(callID), try Self.canSee(stored.call, userID, in: snapshot)
            else {
                throw APIError.notFound("no such call")
            }
            return CallStore.info(stored.call)
        }
    }

    /// Calls where the user has a ringing invitation, is a present participant, or is the
    /// caller of a call that still rings.
    func active(for principal: Principal) async throws -> [CallInfo] {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            try snapshot.calls.liveCallIDs(involving: userID).compactMap {
                try snapshot.calls.load($0).map { CallStore.info($0.call) }
            }
        }
    }

    func current(scopeKind: String?, scopeID: String?, for principal: Principal) async throws -> CallInfo? {
        let (kind, id) = try Self.scope(scopeKind, scopeID)
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            try Self.requireScopeVisible(kind, id, userID, in: snapshot)
            guard let callID = try snapshot.calls.liveCallID(scopeKind: kind, scopeID: id) else { return nil }
            return try snapshot.calls.load(callID).map { CallStore.info($0.call) }
        }
    }

    func history(scopeKind: String?, scopeID: String?, for principal: Principal) async throws -> [CallInfo] {
        let (kind, id) = try Self.scope(scopeKind, scopeID)
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            try Self.requireScopeVisible(kind, id, userID, in: snapshot)
            return try snapshot.calls.endedCallIDs(scopeKind: kind, scopeID: id, limit: 100).compactMap {
                try snapshot.calls.load($0).map { CallStore.info($0.call) }
            }
        }
    }

    /// A LiveKit token for the call's room, only for a present participant of an active call.
    /// `POST /calls/{id}/media-token`. With `wait` > 0 the caller of a call that still rings is
    /// answered when the call leaves `ringing` (or after `wait` seconds), not at once: it then
    /// learns of the answer and gets its token in one leg, with nothing more to send. Every
    /// transition writes a `call_changed` event to the caller, so the event hub wakes it; the
    /// waiter is registered before each read, so no transition slips between the two.
    func mediaToken(_ callID: String, for principal: Principal, wait: Int = 0) async throws -> MediaToken {
        let userID = principal.user.id
        let deadline = store.environment.moment(after: .seconds(wait))
        while true {
            let left = deadline.timeIntervalSince(store.environment.now())
            let waiter = left > 0 ? store.hub.register(userID: userID, timeout: .milliseconds(Int64(left * 1000))) : nil
            defer { waiter.map(store.hub.release) }
            let call = try await store.snapshot { snapshot -> CallRecord in
                guard let stored = try snapshot.calls.load(callID), try Self.canSee(stored.call, userID, in: snapshot)
                else {
                    throw APIError.notFound("no such call")
                }
                return stored.call
            }
            if let token = mint(for: userID, in: call) { return token }
            guard let waiter, call.state == .ringing, call.createdBy == userID, Self.woke(await store.hub.wait(waiter))
            else {
                throw APIError(.notParticipant, "media tokens are only for participants of an active call", status: 403)
            }
        }
    }

    /// Whether a wait ended with news for the user (here or from another instance).
    private static func woke(_ reason: EventHub.WakeReason) -> Bool {
        switch reason {
        case .notified, .changed: true
        case .timedOut, .cancelled: false
        }
    }

    /// A token for `userID` in the call's room, only while the call is active and they are a
    /// present participant.
    private func mint(for userID: String, in call: CallRecord) -> MediaToken? {
        guard call.state == .active, call.presentUserIDs.contains(userID) else { return nil }
        return minter.mint(
            identity: userID, room: call.roomName, callID: call.id, mode: call.mode, now: store.environment.now())
    }

    private static func canSee(_ call: CallRecord, _ userID: String, in repositories: any Repositories) throws -> Bool {
        if call.involvedUserIDs.contains(userID) { return true }
        return call.scopeKind == .group
            && (try? SocialQueries.group(call.scopeID, visibleTo: userID, in: repositories)) != nil
    }

    private static func scope(_ kind: String?, _ id: String?) throws(APIError) -> (ScopeKind, String) {
        guard let kind else { throw APIError.validation("query parameter 'scopeKind' is required", field: "scopeKind") }
        guard let scopeKind = ScopeKind(knownRawValue: kind) else {
            throw APIError.validation("'scopeKind' must be 'conversation' or 'group'", field: "scopeKind")
        }
        guard let id, !id.isEmpty else {
            throw APIError.validation("query parameter 'scopeId' is required", field: "scopeId")
        }
        return (scopeKind, id)
    }

    /// 403 NOT_MEMBER unless the user is in the scope (SPEC §2). An unknown scope gets the same
    /// answer, so the status tells a stranger nothing about which ids exist.
    private static func requireScopeVisible(
        _ kind: ScopeKind, _ id: String, _ userID: String, in repositories: any Repositories
    ) throws {
        let member: Bool
        switch kind {
        case .conversation: member = (try? SocialQueries.conversationPeer(id, of: userID, in: repositories)) != nil
        case .group: member = (try? SocialQueries.group(id, visibleTo: userID, in: repositories)) != nil
        case .unknown: member = false
        }
        guard member else {
            throw APIError(.notMember, "you are not a member of this \(kind.rawValue)")
        }
    }

    // MARK: Timers (derived from stored state, so a restart resumes them)

    /// Applies the ring timeout to every call whose deadline has passed.
    func sweepRingTimeouts() async throws {
        let now = CallStore.milliseconds(store.environment.now())
        let due = try await store.snapshot { try $0.calls.ringTimedOutCallIDs(at: now) }
        for callID in due {
            do {
                try await transition(callID, visibleTo: nil) { call, context in
                    CallStateMachine.ringTimedOut(call, now: context.now)
                }
            } catch {
                logger.warning(
                    "ring timeout not applied; will retry",
                    ["call.id": .string(callID), "error": .string(String(describing: error))])
            }
        }
    }

    /// What a media server reported about a room (a LiveKit webhook).
    enum RoomNews: Sendable, Equatable {
        /// Someone joined: the room is not empty.
        case joined
        /// Someone left for good (LiveKit already waited out its own reconnect window): count
        /// the room now; empty, the call ends now.
        case left
        /// Someone's connection broke (they may come back): count the room now, and an empty
        /// room starts the grace at once instead of at the next watchdog pass.
        case dropped
        /// The room is gone (LiveKit closed it after its own departure timeout): the call
        /// cannot go on, and ends now.
        case finished
    }

    /// Applies what the media server said about `room` to its call's media presence. A room
    /// that is not an active call's is ignored (it may be someone else's, or already over).
    func roomNews(_ news: RoomNews, room: String) async throws {
        guard room.hasPrefix("call_") else { return }
        let callID = String(room.dropFirst("call_".count))
        guard let stored = try await store.snapshot({ try $0.calls.load(callID) }), stored.call.roomName == room,
            stored.call.state == .active
        else { return }
        let count: Int?
        switch news {
        case .joined: count = 1
        case .finished: count = 0
        case .left, .dropped:
            do {
                count = try await media.participantCount(room: room)
            } catch {
                logger.warning(
                    "could not count media participants",
                    ["call.id": .string(callID), "error": .string(String(describing: error))])
                count = nil
            }
        }
        let grace = news == .finished || news == .left ? 0 : emptyRoomGrace
        try await transition(callID, visibleTo: nil) { call, context in
            CallStateMachine.mediaCounted(call, participants: count, now: context.now, grace: grace)
        }
    }

    /// Counts each active call's media participants; a failed count changes nothing.
    func checkEmptyRooms() async throws {
        guard media.managesRooms else { return }
        let active = try await store.snapshot { try $0.calls.activeRooms() }
        let grace = emptyRoomGrace
        for (callID, room) in active {
            let count: Int?
            do {
                count = try await media.participantCount(room: room)
            } catch {
                logger.warning(
                    "could not count media participants",
                    ["call.id": .string(callID), "error": .string(String(describing: error))])
                count = nil
            }
            do {
                try await transition(callID, visibleTo: nil) { call, context in
                    CallStateMachine.mediaCounted(call, participants: count, now: context.now, grace: grace)
                }
            } catch {
                logger.warning(
                    "watchdog transition failed",
                    ["call.id": .string(callID), "error": .string(String(describing: error))])
            }
        }
    }
}
