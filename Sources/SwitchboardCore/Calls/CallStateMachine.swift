import Foundation
import SwitchboardWire

/// Every rule of a call's life, as pure functions: each takes the call, the actor and the
/// time, and returns the new call and what must happen (events, rings, media work). No I/O.
///
/// ```swift
/// let transition = try CallStateMachine.accept(call, by: userID, now: now, busyElsewhere: false)
/// // perform transition.effects.media, then store transition.call and write the events
/// ```
public enum CallStateMachine {
    /// A call after a transition, and what the transition asks for.
    public struct Transition: Sendable, Equatable {
        public var call: CallRecord
        public var effects: CallEffects

        public init(call: CallRecord, effects: CallEffects) {
            self.call = call
            self.effects = effects
        }
    }

    // MARK: Creating

    /// A new call. Every invitee rings, except those already in another call, who are `busy`;
    /// when all are busy the call is born ended with reason `busy`.
    public static func create(
        id: String, scopeKind: ScopeKind, scopeID: String, mode: CallMode, caller: String, invitees: [String],
        busy: Set<String>, roomName: String, now: Date, ringTimeout: TimeInterval
    ) -> Transition {
        var seen: Set<String> = [caller]
        let invitations = invitees.filter { seen.insert($0).inserted }.map {
            CallInvitation(userID: $0, state: busy.contains($0) ? .busy : .ringing, updatedAt: now)
        }
        var call = CallRecord(
            id: id, scopeKind: scopeKind, scopeID: scopeID, mode: mode, state: .ringing, endReason: nil,
            createdBy: caller,
            createdAt: now, answeredAt: nil, endedAt: nil, ringDeadline: now.addingTimeInterval(ringTimeout),
            roomName: roomName,
            emptySince: nil, invitations: invitations, participants: [])
        let ringing = call.ringingUserIDs
        if ringing.isEmpty {
            call.state = .ended
            call.endReason = .busy
            call.endedAt = now
        }
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, ring: ringing))
    }

    // MARK: Invitee answers

    /// A ringing invitee accepts. The first accept makes the call active with the caller and
    /// the acceptor as participants; later group invitees join the active call.
    ///
    /// An accept repeated by an invitee who already accepted and is present in the active call
    /// changes nothing (`nil`): a retried or hedged request whose first copy got through.
    public static func accept(
        _ call: CallRecord, by userID: String, now: Date, busyElsewhere: Bool
    ) throws(CallTransitionError) -> Transition? {
        if call.state == .active, call.presentUserIDs.contains(userID),
            call.invitations.contains(where: { $0.userID == userID && $0.state == .accepted })
        {
            return nil
        }
        var call = call
        let index = try ringingInvitation(of: userID, in: call)
        if busyElsewhere { throw .busy }
        call.invitations[index].state = .accepted
        call.invitations[index].updatedAt = now
        if call.state == .ringing {
            call.state = .active
            call.answeredAt = now
            call.participants = [CallParticipant(userID: call.createdBy, joinedAt: now)]
        }
        addParticipant(userID, to: &call, now: now)
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs))
    }

    /// A ringing invitee declines. A conversation call ends `declined`; a group call ends
    /// `declined` when nobody accepted and no invitation rings any more.
    public static func decline(
        _ call: CallRecord, by userID: String, now: Date
    ) throws(CallTransitionError) -> Transition {
        var call = call
        let index = try ringingInvitation(of: userID, in: call)
        call.invitations[index].state = .declined
        call.invitations[index].updatedAt = now
        var media: [MediaAction] = []
        if call.state == .ringing && (call.scopeKind == .conversation || call.ringingUserIDs.isEmpty) {
            media = end(&call, reason: .declined, now: now)
        }
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    // MARK: Participants

    /// A member of the group joins its active call (answering their ringing invitation, if any).
    public static func join(
        _ call: CallRecord, by userID: String, now: Date, isMember: Bool, busyElsewhere: Bool
    ) throws(CallTransitionError) -> Transition {
        var call = call
        guard call.state != .ended else { throw .callEnded }
        guard call.scopeKind == .group else { throw .notJoinable }
        guard isMember else { throw .notMember }
        guard !call.presentUserIDs.contains(userID) else { throw .alreadyParticipant }
        guard call.state == .active else { throw .callNotActive }
        if busyElsewhere { throw .busy }
        // A ringing invitation is answered by joining. An invitation already answered keeps its
        // answer (it records how they responded to the ring); `participants` says they joined.
        if let index = call.invitations.firstIndex(where: { $0.userID == userID && $0.state == .ringing }) {
            call.invitations[index].state = .accepted
            call.invitations[index].updatedAt = now
        }
        addParticipant(userID, to: &call, now: now)
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs))
    }

    /// A participant leaves. A conversation call ends `completed` and its room is deleted; in a
    /// group call the participant is removed from the room, and the last one out ends it.
    public static func leave(_ call: CallRecord, by userID: String, now: Date) throws(CallTransitionError) -> Transition
    {
        var call = call
        guard call.involvedUserIDs.contains(userID) else { throw .notInvolved }
        guard call.state != .ended else { throw .callEnded }
        guard let index = call.participants.firstIndex(where: { $0.userID == userID && $0.isPresent }) else {
            throw .notParticipant
        }
        call.participants[index].leftAt = now
        let media: [MediaAction]
        if call.scopeKind == .conversation || call.presentUserIDs.isEmpty {
            media = end(&call, reason: .completed, now: now)
        } else {
            media = [.removeParticipant(room: call.roomName, identity: userID)]
        }
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    /// The caller ends a call that still rings.
    public static func cancel(
        _ call: CallRecord, by userID: String, now: Date
    ) throws(CallTransitionError) -> Transition {
        var call = call
        guard call.involvedUserIDs.contains(userID) else { throw .notInvolved }
        guard call.state != .ended else { throw .callEnded }
        guard userID == call.createdBy else { throw .notCaller }
        guard call.state == .ringing else { throw .callNotRinging }
        let media = end(&call, reason: .cancelled, now: now)
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    // MARK: Timers

    /// At or after the ring deadline, ringing invitations become `missed`; a call that never
    /// became active ends `missed`. `nil` when there is nothing to do.
    public static func ringTimedOut(_ call: CallRecord, now: Date) -> Transition? {
        guard call.state != .ended, now >= call.ringDeadline, !call.ringingUserIDs.isEmpty else { return nil }
        var call = call
        var media: [MediaAction] = []
        if call.state == .ringing {
            media = end(&call, reason: .missed, now: now)
        } else {
            for index in call.invitations.indices where call.invitations[index].state == .ringing {
                call.invitations[index].state = .missed
                call.invitations[index].updatedAt = now
            }
        }
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    /// The empty-room watchdog's reading for an active call: `participants` is the media room's
    /// count, or `nil` when counting failed (which is not an empty room). After `grace` of
    /// continuous emptiness the call ends `connection_lost`. `nil` when nothing changes.
    public static func mediaCounted(
        _ call: CallRecord, participants: Int?, now: Date, grace: TimeInterval
    ) -> Transition? {
        guard call.state == .active, let participants else { return nil }
        var call = call
        if participants > 0 {
            guard call.emptySince != nil else { return nil }
            call.emptySince = nil
            return Transition(call: call, effects: CallEffects())
        }
        let since = call.emptySince ?? now
        guard now.timeIntervalSince(since) >= grace else {
            if call.emptySince != nil { return nil }
            call.emptySince = now
            return Transition(call: call, effects: CallEffects())
        }
        let media = end(&call, reason: .connectionLost, now: now)
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    // MARK: Endings from the social graph

    /// The pair stopped being friends, one blocked the other, or the group was dissolved: the
    /// call ends with that reason, its room deleted first. `nil` when it already ended.
    public static func scopeEnded(_ call: CallRecord, reason: CallInfo.EndReason, now: Date) -> Transition? {
        guard call.state != .ended else { return nil }
        var call = call
        let media = end(&call, reason: reason, now: now)
        return Transition(call: call, effects: CallEffects(notify: call.involvedUserIDs, media: media))
    }

    /// A member was removed from the call's group: their ringing invitation is cancelled and
    /// they are removed from the room. The caller's removal cancels a ringing call; the last
    /// participant's removal ends an active one. `nil` when it concerns nothing.
    public static func memberRemoved(_ call: CallRecord, userID: String, now: Date) -> Transition? {
        guard call.state != .ended, call.involvedUserIDs.contains(userID) else { return nil }
        let original = call
        var call = call
        let notify = call.involvedUserIDs
        if call.state == .ringing && userID == call.createdBy {
            let media = end(&call, reason: .cancelled, now: now)
            return Transition(call: call, effects: CallEffects(notify: notify, media: media))
        }
        var media: [MediaAction] = []
        if let index = call.invitations.firstIndex(where: { $0.userID == userID && $0.state == .ringing }) {
            call.invitations[index].state = .cancelled
            call.invitations[index].updatedAt = now
        }
        if let index = call.participants.firstIndex(where: { $0.userID == userID && $0.isPresent }) {
            call.participants[index].leftAt = now
            media.append(.removeParticipant(room: call.roomName, identity: userID))
        }
        if call == original { return nil }  // nothing of theirs was live: no change, no events
        if call.state == .active && call.presentUserIDs.isEmpty {
            media = end(&call, reason: .completed, now: now)
        } else if call.state == .ringing && call.ringingUserIDs.isEmpty {
            // Nobody left to ring: if the others had declined, that is the call's outcome.
            let declined = call.invitations.contains { $0.state == .declined }
            media = end(&call, reason: declined ? .declined : .cancelled, now: now)
        }
        return Transition(call: call, effects: CallEffects(notify: notify, media: media))
    }

    // MARK: Helpers

    private static func ringingInvitation(of userID: String, in call: CallRecord) throws(CallTransitionError) -> Int {
        guard call.involvedUserIDs.contains(userID) else { throw .notInvolved }
        guard call.state != .ended else { throw .callEnded }
        guard let index = call.invitations.firstIndex(where: { $0.userID == userID }),
            call.invitations[index].state == .ringing
        else {
            throw .invitationNotRinging
        }
        return index
    }

    /// Someone joining means the room is about to be used: the watchdog's grace starts over.
    private static func addParticipant(_ userID: String, to call: inout CallRecord, now: Date) {
        call.emptySince = nil
        if let index = call.participants.firstIndex(where: { $0.userID == userID }) {
            call.participants[index].joinedAt = now
            call.participants[index].leftAt = nil
        } else {
            call.participants.append(CallParticipant(userID: userID, joinedAt: now))
        }
    }

    /// Ends the call: ringing invitations become `missed` when nobody answered them in time
    /// (timeout, last leaver, lost connection) and `cancelled` otherwise; everyone still in the
    /// room leaves; a room that was ever used is deleted.
    private static func end(_ call: inout CallRecord, reason: CallInfo.EndReason, now: Date) -> [MediaAction] {
        let unanswered: InvitationState =
            [.missed, .completed, .connectionLost].contains(reason) ? .missed : .cancelled
        for index in call.invitations.indices where call.invitations[index].state == .ringing {
            call.invitations[index].state = unanswered
            call.invitations[index].updatedAt = now
        }
        for index in call.participants.indices where call.participants[index].isPresent {
            call.participants[index].leftAt = now
        }
        call.state = .ended
        call.endReason = reason
        call.endedAt = now
        call.emptySince = nil
        return call.answeredAt == nil ? [] : [.deleteRoom(call.roomName)]
    }
}
