import Foundation
import SwitchboardWire

// The steps every input shares: beginning, withdrawing, finishing and forgetting calls.
extension CallLedger {
    // MARK: Helpers

    /// The user ended the call here (or the call system dropped it): tell the server what that
    /// means at this stage.
    mutating func endedLocally(_ callID: String, alsoInSystem: Bool = false) -> [Effect] {
        guard let entry = entries[callID], entry.stage != .ended else { return [] }
        return finish(callID, .remoteEnded, server: withdrawal(for: callID), local: true, endInSystem: alsoInSystem)
    }

    mutating func beginIncoming(callID: String, update: CallUpdate, origin: Origin) -> [Effect] {
        let uuid = CallIdentity.uuid(forCallID: callID)
        insert(
            Entry(
                callID: callID, uuid: uuid, direction: .incoming, origin: origin, update: update, system: .reporting,
                stage: .ringing))
        return [
            reportIncoming(uuid, update),
            .notify(.incoming(callID: callID, origin: origin)),
            // Is it still ringing? (A stale push is reported, then ended.)
            .server(callID: callID, .fetch),
            .watch,
        ]
    }

    mutating func reportIncoming(_ uuid: UUID, _ update: CallUpdate) -> Effect {
        nextReport += 1
        return .reportIncoming(uuid, update, report: nextReport)
    }

    /// What tells the server we are out: a callee whose accept the server has not confirmed
    /// declines (a failed accept left the invitation ringing; an accept that landed after all is
    /// left when a re-read shows it), a caller cancels until the call is answered, everyone else
    /// leaves.
    mutating func withdrawal(for callID: String) -> ServerRequest {
        guard let entry = entries[callID] else { return .leave }
        switch entry.direction {
        case .outgoing: return entry.serverActive ? .leave : .cancel
        case .incoming:
            if entry.answer == .accepted { return .leave }
            entries[callID]?.answer = .declined(afterAccepting: entry.answer.acceptedHere)
            return .decline
        }
    }

    /// Sends a withdrawal and remembers it until the server confirms it.
    mutating func withdraw(_ callID: String, _ request: ServerRequest) -> [Effect] {
        // One still waiting for a new token keeps waiting: this one goes with that token too.
        let awaitsSession = entries[callID]?.withdrawal?.awaitsSession ?? false
        entries[callID]?.withdrawal = Withdrawal(request: request, attempts: 1, awaitsSession: awaitsSession)
        return [.server(callID: callID, request)]
    }

    /// Retries for a withdrawal the server could not take (503, 429, no answer), with backoff.
    static let withdrawalRetries = 5

    /// A local failure (answer or media): the action fails, the call ends as failed, the server
    /// is told, so nothing is left behind (the zombie of rule 4).
    mutating func failCall(_ callID: String) -> [Effect] {
        guard entries[callID] != nil else { return [] }
        return finish(callID, .failed, server: withdrawal(for: callID))
    }

    /// Ends a call everywhere, once: the pending action fails, the call system hears the reason
    /// (unless `local`: the user ended it here, usually through an end action that already ended
    /// it there — `endInSystem` overrides), media and audio stop, the server is told when
    /// `server` is set.
    mutating func finish(
        _ callID: String, _ reason: CallEndReason, server: ServerRequest?, local: Bool = false,
        endInSystem reportEnd: Bool? = nil,
        refusal: IncomingCallError? = nil
    ) -> [Effect] {
        guard var entry = entries[callID], entry.stage != .ended else { return [] }
        var effects: [Effect] = []
        if let action = entry.pendingAction {
            effects.append(.fail(action))
            entry.pendingAction = nil
        }
        entry.stage = .ended
        entry.endReason = reason
        entries[callID] = entry
        remember(ended: callID)
        if reportEnd ?? !local { effects += endInSystem(callID, reason) }
        if entry.media == .playing {
            entries[callID]?.media = .joined
            effects += [.stopAudio(callID: callID), .notify(.audioStopped(callID: callID))]
        }
        if entry.media != .notRequested { effects.append(.leaveMedia(callID: callID)) }
        if entry.unresolved {
            // No call id to tell the server yet: a decline goes once the call is known.
            if let action = entry.resolution.answer { effects.append(.fail(action)) }
            entries[callID]?.resolution = entry.resolution.ended(declining: server == .decline)
        } else if let server {
            effects += withdraw(callID, server)
        }
        effects.append(.notify(.ended(callID: callID, reason: local ? nil : reason, refusal: refusal)))
        return effects
    }

    /// Reports the end to the call system now, or once the pending report completes.
    mutating func endInSystem(_ callID: String, _ reason: CallEndReason) -> [Effect] {
        guard var entry = entries[callID] else { return [] }
        switch entry.system {
        case .reporting, .reportingAgain:
            entry.queuedEnd = reason
            entries[callID] = entry
            return []
        case .live:
            entry.system = .ended
            entry.queuedEnd = nil
            entries[callID] = entry
            return [.reportEnded(entry.uuid, reason)]
        case .ended, .refused:
            return []
        }
    }

    mutating func startAudioIfReady() -> [Effect] {
        guard audioSessionActive else { return [] }
        var effects: [Effect] = []
        for (callID, entry) in entries where entry.media == .joined && entry.stage == .active {
            entries[callID]?.media = .playing
            effects += [.startAudio(callID: callID), .notify(.audioStarted(callID: callID))]
        }
        return effects
    }

    mutating func insert(_ entry: Entry) {
        entries[entry.callID] = entry
        byUUID[entry.uuid] = entry.callID
    }

    mutating func remember(ended callID: String) {
        endedOrder.append(callID)
        while endedOrder.count > Self.endedMemory {
            let old = endedOrder.removeFirst()
            if let entry = entries[old], entry.stage == .ended, !entry.system.awaitsReport {
                entries[old] = nil
                if byUUID[entry.uuid] == old { byUUID[entry.uuid] = nil }
            }
        }
    }

    static func isPresent(_ userID: String, in call: CallInfo) -> Bool {
        call.participants.contains { $0.userId == userID && $0.leftAt == nil }
    }

    /// How the server's state ends this device's call, if it does (rule 4).
    static func endReason(of call: CallInfo, for userID: String, entry: Entry) -> CallEndReason? {
        if entry.direction == .incoming, let invitation = call.invitations.first(where: { $0.userId == userID }) {
            switch invitation.state {
            case .accepted where !entry.answer.acceptedHere: return .answeredElsewhere
            case .declined where !entry.answer.declinedHere: return .declinedElsewhere
            case .missed: return .unanswered
            case .cancelled, .busy: return .remoteEnded
            case .ringing, .accepted, .declined, .unknown: break
            }
        }
        // Our own participation ended on the server (left from another device, or dropped).
        if call.state == .active, entry.stage == .active, !isPresent(userID, in: call),
            call.participants.contains(where: { $0.userId == userID })
        {
            return .remoteEnded
        }
        guard call.state == .ended else { return nil }
        return endReason(serverReason: call.endReason)
    }

    /// The server's end reason as the call system's (documented in docs/sdk.md).
    public static func endReason(serverReason: CallInfo.EndReason?) -> CallEndReason {
        switch serverReason {
        case .missed: .unanswered
        case .connectionLost: .failed
        case .declined, .completed, .cancelled, .busy, .unfriended, .blocked, .groupDissolved: .remoteEnded
        case .unknown, nil: .failed
        }
    }
}
