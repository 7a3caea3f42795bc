import Foundation
import SwitchboardWire

// What comes back: server answers, media joins, a new session token, timers.
extension CallLedger {
    // MARK: Server and media results

    /// A server request came back.
    public mutating func serverAnswered(_ callID: String, _ request: ServerRequest, _ result: ServerResult) -> [Effect]
    {
        guard let entry = entries[callID] else {
            if case .call(let call) = result { return callRead(call) }
            if case .callAndToken(let call, _) = result { return callRead(call) }
            return []
        }
        if entry.unresolved { return resolutionRead(callID, result) }
        switch (request, result) {
        case (.earlyMediaToken, .mediaToken(let token)):
            // Only a participant of an active call gets one: the callee answered.
            guard var entry = entries[callID] else { return [] }
            entry.earlyTokenInFlight = false
            guard entry.direction == .outgoing, entry.stage == .dialing || entry.stage == .connecting,
                !entry.mediaJoinStarted
            else {
                entries[callID] = entry
                return []
            }
            entry.stage = .connecting
            entry.serverActive = true
            entry.media.request()
            entry.mediaJoinStarted = true
            entries[callID] = entry
            return [.joinMedia(callID: callID, token)]
        case (.earlyMediaToken, .failure(let status, _)):
            // Still ringing when the hold ran out, or the call ended: the events tell. (A re-read
            // that saw the answer has asked for a token of its own.)
            entries[callID]?.earlyTokenInFlight = false
            if status == 403, entry.direction == .outgoing, entry.stage == .dialing,
                entry.earlyTokenAsks < Self.earlyTokenAskLimit
            {
                // Most likely the hold ran out while it still rings (45 s of ringing, 25 s a
                // hold): hold once more. An ended call answers at once and the events end it.
                entries[callID]?.earlyTokenInFlight = true
                entries[callID]?.earlyTokenAsks += 1
                return [.server(callID: callID, .earlyMediaToken)]
            }
            guard entry.mediaTokenFailed, entry.stage == .connecting, !entry.mediaJoinStarted else { return [] }
            return failCall(callID)
        case (.mediaToken, .mediaToken(let token)):
            guard entry.stage == .answering || entry.stage == .connecting, !entry.mediaJoinStarted else { return [] }
            entries[callID]?.mediaJoinStarted = true
            return [.joinMedia(callID: callID, token)]
        case (.mediaToken, .failure):
            guard entry.stage == .answering || entry.stage == .connecting, !entry.mediaJoinStarted else { return [] }
            if entry.earlyTokenInFlight {
                // The held early token may still bring one: it decides.
                entries[callID]?.mediaTokenFailed = true
                return []
            }
            return failCall(callID)
        case (.accept, .call(let call)):
            entries[callID]?.answer.serverAccepted()
            var effects = callRead(call)
            if entries[callID]?.stage == .answering, entries[callID]?.media == .notRequested {
                entries[callID]?.media.request()
                effects.append(.server(callID: callID, .mediaToken))
            }
            return effects
        case (.accept, .callAndToken(let call, let token)):
            // The token came with the accept: media joins at once, no second request.
            entries[callID]?.answer.serverAccepted()
            var effects = callRead(call)
            if entries[callID]?.stage == .answering, entries[callID]?.media == .notRequested {
                entries[callID]?.media.request()
                entries[callID]?.mediaJoinStarted = true
                effects.append(.joinMedia(callID: callID, token))
            }
            return effects
        case (.accept, .failure):
            guard entry.stage == .answering else { return [] }
            return failCall(callID)
        case (.decline, .failure(let status, _)), (.leave, .failure(let status, _)), (.cancel, .failure(let status, _)):
            guard let withdrawal = entry.withdrawal, withdrawal.request == request else { return [] }
            if status == 401 {
                // The token is refused: kept until `sessionRenewed` brings a new one.
                entries[callID]?.withdrawal?.awaitsSession = true
                return []
            }
            if status == 0 || status == 429 || status >= 500 {
                guard withdrawal.attempts < Self.withdrawalRetries else {
                    entries[callID]?.withdrawal = nil
                    return []
                }
                let delay = min(pow(2, Double(withdrawal.attempts - 1)), 8)
                return [.schedule(callID: callID, .withdrawalRetry, afterSeconds: delay)]
            }
            // Refused (409: the call moved on, e.g. answered as we cancelled): re-read it; a
            // read of an ended entry leaves if we are still in the call.
            entries[callID]?.withdrawal = nil
            return status == 404 ? [] : [.server(callID: callID, .fetch)]
        case (.decline, .call(let call)), (.leave, .call(let call)), (.cancel, .call(let call)):
            if entry.withdrawal?.request == request { entries[callID]?.withdrawal = nil }
            return callRead(call)
        case (.fetch, .failure(let status, _)):
            // The server no longer shows us the call: it cannot go on.
            guard status == 404, entry.stage != .ended else { return [] }
            return finish(callID, .failed, server: nil)
        case (_, .call(let call)), (_, .callAndToken(let call, _)):
            return callRead(call)
        default:
            return []
        }
    }

    /// Media joined (the engine exists now) or failed.
    public mutating func mediaJoined(_ callID: String, succeeded: Bool) -> [Effect] {
        guard var entry = entries[callID] else { return [] }
        guard entry.stage == .answering || entry.stage == .connecting else {
            // Joined after the call ended: leave again.
            return succeeded ? [.leaveMedia(callID: callID)] : []
        }
        guard succeeded else { return failCall(callID) }
        entry.media = .joined
        var effects: [Effect] = []
        if entry.stage == .answering, let action = entry.pendingAction {
            effects.append(.fulfil(action))
            entry.pendingAction = nil
        }
        // Media joins once per call (the stage leaves answering/connecting here), so this is
        // reported once.
        if entry.direction == .outgoing {
            effects.append(.reportConnected(entry.uuid))
        }
        entry.stage = .active
        entries[callID] = entry
        // A mute (or hold) chosen before the engine existed applies now.
        if entry.microphone.closed { effects.append(.setMuted(callID: callID, true)) }
        effects.append(.notify(.connected(callID: callID)))
        return effects + startAudioIfReady()
    }

    /// The app brought a new session token (`use(backend:)`): follow the live calls again
    /// (the watcher stops on a 401) and re-read them, since their events may have been missed;
    /// send again the withdrawals the old token could not deliver.
    public mutating func sessionRenewed() -> [Effect] {
        var effects: [Effect] = []
        for callID in entries.keys.sorted() {
            guard let withdrawal = entries[callID]?.withdrawal, withdrawal.awaitsSession else { continue }
            entries[callID]?.withdrawal?.awaitsSession = false
            effects.append(.server(callID: callID, withdrawal.request))
        }
        let live = liveCallIDs
        if !live.isEmpty { effects += [.watch] + live.map { .server(callID: $0, .fetch) } }
        return effects
    }

    /// A scheduled timer fired.
    public mutating func timerFired(_ callID: String, _ timer: Timer) -> [Effect] {
        guard let entry = entries[callID] else { return [] }
        switch timer {
        case .answerDeadline:
            if entry.resolution.answer != nil, entry.stage == .ringing {
                // The server never said which call it was in time (rule 5): failed here, and
                // declined there should it still be named.
                return finish(callID, .failed, server: .decline)
            }
            guard entry.stage == .answering else { return [] }
            return failCall(callID)
        case .dialTimeout:
            guard entry.direction == .outgoing, entry.stage == .dialing else { return [] }
            return finish(callID, .unanswered, server: .cancel)
        case .withdrawalRetry:
            guard let withdrawal = entry.withdrawal else { return [] }
            entries[callID]?.withdrawal?.attempts += 1
            return [.server(callID: callID, withdrawal.request)]
        case .resolveRetry:
            guard entry.unresolved, entry.stage != .ended || entry.resolution.declinesWhenKnown else { return [] }
            return [.server(callID: callID, .fetch)]
        }
    }
}
