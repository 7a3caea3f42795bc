import Foundation
import SwitchboardWire

// A VoIP push that could not be decrypted (SPEC §3 "Encrypted VoIP payloads"): it is still
// reported at once (rule 1), as an unknown caller under a placeholder UUID, and resolved from
// the server: the user's ringing call in `/calls/active`, or the first ringing call the event
// stream shows, becomes that entry (its UUID stays the placeholder's, so one screen shows).
extension CallLedger {
    /// The key of a placeholder entry: this prefix and its UUID.
    public static let placeholderPrefix = "placeholder:"
    /// Reads of `/calls/active` before an unresolved placeholder gives up (ends as failed).
    static let resolveAttemptLimit = 3

    mutating func unreadablePushReceived(placeholder: UUID) -> [Effect] {
        let key = Self.placeholderPrefix + placeholder.uuidString
        var entry = Entry(
            callID: key, uuid: placeholder, direction: .incoming, origin: .push, update: CallUpdate(handle: "unknown"),
            system: .reporting, stage: .ringing)
        entry.unresolved = true
        entry.resolveAttempts = 1
        insert(entry)
        // The fetch of a placeholder reads /calls/active; the watcher's events may name it first.
        return [reportIncoming(placeholder, entry.update), .server(callID: key, .fetch), .watch]
    }

    /// The unresolved placeholder still ringing, if any (the oldest, should there be two).
    var unresolvedPlaceholder: String? {
        entries.values.filter { $0.unresolved && $0.stage != .ended }.map(\.callID).min()
    }

    /// A read for an unresolved placeholder came back.
    mutating func resolutionRead(_ key: String, _ result: ServerResult) -> [Effect] {
        guard let entry = entries[key], entry.unresolved else { return [] }
        switch result {
        case .calls(let calls):
            let candidates = calls.filter { call in
                call.state == .ringing && call.createdBy != userID && entries[call.id] == nil
                    && call.invitations.contains { $0.userId == userID && $0.state == .ringing }
            }
            // The newest: the push that just came is for the call that just started.
            guard let call = candidates.max(by: { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }) else {
                // Nothing rings for us (the call is over already, or the push was not ours).
                entries[key]?.unresolved = false
                return entry.stage == .ended ? [] : finish(key, .failed, server: nil)
            }
            return adopt(key, as: call)
        case .failure(let status, _) where entry.stage != .ended && (status == 0 || status == 429 || status >= 500)
            && entry.resolveAttempts < Self.resolveAttemptLimit:
            entries[key]?.resolveAttempts += 1
            return [.schedule(callID: key, .resolveRetry, afterSeconds: Double(entry.resolveAttempts))]
        case .failure:
            entries[key]?.unresolved = false
            return entry.stage == .ended ? [] : finish(key, .failed, server: nil)
        case .call, .callAndToken, .mediaToken:
            return []
        }
    }

    /// The placeholder `key` is `call`: the entry takes its id (keeping the UUID the call
    /// system knows), shows who rings, and goes on as any incoming call. One the user already
    /// ended is declined on the server now.
    mutating func adopt(_ key: String, as call: CallInfo) -> [Effect] {
        guard var entry = entries.removeValue(forKey: key) else { return [] }
        entry.callID = call.id
        entry.unresolved = false
        entry.update = CallUpdate(handle: call.scopeId, callerName: nil, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        entries[call.id] = entry
        byUUID[entry.uuid] = call.id
        if let index = endedOrder.firstIndex(of: key) { endedOrder[index] = call.id }
        guard entry.stage != .ended else {
            return entry.declineOnResolution ? withdraw(call.id, .decline) : []
        }
        var effects: [Effect] = [.reportUpdated(entry.uuid, entry.update), .notify(.incoming(callID: call.id, origin: .push))]
        if let action = entry.answerAwaitingResolution {
            entries[call.id]?.answerAwaitingResolution = nil
            effects += startAnswer(call.id, action: action)
        }
        return effects + callRead(call)
    }

    /// The answer action `action` on a ringing incoming call: accept on the server, within the
    /// answer deadline (rule 5).
    mutating func startAnswer(_ callID: String, action: UUID) -> [Effect] {
        guard var entry = entries[callID] else { return [.fail(action)] }
        entry.stage = .answering
        entry.pendingAction = action
        entry.answer = .accepting
        entries[callID] = entry
        return [
            .server(callID: callID, .accept),
            .schedule(callID: callID, .answerDeadline, afterSeconds: configuration.answerDeadline),
        ]
    }
}
