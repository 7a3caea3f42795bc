import Foundation
import SwitchboardWire

// The call system's side: the app's requests through it, its actions and its audio session.
extension CallLedger {
    // MARK: Call-system actions

    /// `provider(_:perform:)`.
    public mutating func actionPerformed(id: UUID, _ request: CallActionRequest) -> [Effect] {
        guard let callID = byUUID[request.callUUID], var entry = entries[callID] else {
            // An end for a call this process does not know is fulfilled, never failed.
            return [request.kind == .end ? .fulfil(id) : .fail(id)]
        }
        switch request.kind {
        case .answer:
            guard entry.direction == .incoming, entry.stage == .ringing else { return [.fail(id)] }
            if entry.unresolved {
                // Which call it is, the server has still to say: the answer waits for that,
                // within the answer deadline (rule 5).
                entry.resolution = entry.resolution.answering(id)
                entries[callID] = entry
                return [.schedule(callID: callID, .answerDeadline, afterSeconds: configuration.answerDeadline)]
            }
            return startAnswer(callID, action: id)
        case .start:
            guard entry.direction == .outgoing, entry.stage != .ended else { return [.fail(id)] }
            if entry.system == .reporting { entry.system = .live }
            entries[callID] = entry
            return [.reportConnecting(entry.uuid), .fulfil(id)]
        case .end:
            guard entry.stage != .ended else {
                entry.system = .ended
                entries[callID] = entry
                return [.fulfil(id)]
            }
            entry.system = .ended
            entries[callID] = entry
            // The end action itself ends the call in the call system.
            return [.fulfil(id)] + endedLocally(callID)
        case .setMuted(let muted):
            guard entry.stage != .ended else { return [.fail(id)] }
            entry.microphone.mutedByUser = muted
            entries[callID] = entry
            return [.setMuted(callID: callID, entry.microphone.closed), .fulfil(id)]
        case .setHeld(let held):
            // On hold the microphone is closed; off hold it is as the user left it.
            guard entry.stage != .ended else { return [.fail(id)] }
            entry.microphone.held = held
            entries[callID] = entry
            return [.setMuted(callID: callID, entry.microphone.closed), .fulfil(id)]
        }
    }

    /// `provider(_:timedOutPerforming:)`: the call system gave up on the action.
    /// `request` names the action's call and kind, for a timeout that crossed our own completion.
    public mutating func actionTimedOut(id: UUID, request: CallActionRequest? = nil) -> [Effect] {
        if let callID = entries.values.first(where: { $0.pendingAction == id })?.callID, var entry = entries[callID] {
            entry.pendingAction = nil
            entries[callID] = entry
            return finish(callID, .failed, server: withdrawal(for: callID))
        }
        // We fulfilled it in the same instant CallKit gave up on it: the call system ended the
        // call, so end it here and on the server too.
        guard let request, request.kind == .answer || { if case .start = request.kind { true } else { false } }(),
            let callID = byUUID[request.callUUID], var entry = entries[callID], entry.stage != .ended
        else { return [] }
        entry.system = .ended
        entries[callID] = entry
        return finish(callID, .failed, server: withdrawal(for: callID), local: true)
    }

    /// `providerDidReset`: the call system dropped every call.
    public mutating func callSystemReset() -> [Effect] {
        var effects: [Effect] = []
        audioSessionActive = false
        for callID in liveCallIDs {
            guard var entry = entries[callID] else { continue }
            entry.system = .ended
            entry.pendingAction = nil
            entries[callID] = entry
            effects += endedLocally(callID)
        }
        return effects
    }

    // MARK: Audio (rule 7)

    public mutating func audioSessionActivated() -> [Effect] {
        audioSessionActive = true
        return startAudioIfReady()
    }

    public mutating func audioSessionDeactivated() -> [Effect] {
        audioSessionActive = false
        var effects: [Effect] = []
        for (callID, entry) in entries where entry.media == .playing {
            entries[callID]?.media = .joined
            effects += [.stopAudio(callID: callID), .notify(.audioStopped(callID: callID))]
        }
        return effects
    }
}
