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
        // In the foreground the event stream often shows the call before its push: with one
        // such call ringing, this is its push (reported again under its UUID, no second screen).
        let fromTheFeed = entries.values.filter {
            $0.direction == .incoming && $0.origin == .eventStream && $0.stage == .ringing
        }
        if fromTheFeed.count == 1, let known = fromTheFeed.first { return [reportIncoming(known.uuid, known.update)] }
        let key = Self.placeholderPrefix + placeholder.uuidString
        var entry = Entry(
            callID: key, uuid: placeholder, direction: .incoming, origin: .push, update: CallUpdate(handle: "unknown"),
            system: .reporting, stage: .ringing)
        entry.resolution = .started
        insert(entry)
        // The fetch of a placeholder reads /calls/active; the watcher's events may name it first.
        return [reportIncoming(placeholder, entry.update), .server(callID: key, .fetch), .watch]
    }

    /// The unresolved placeholder a ringing call the server shows may be: one still ringing, or
    /// one the user declined before it was named (any, should there be two: they cannot be told apart).
    var unresolvedPlaceholder: String? {
        entries.values.filter { $0.unresolved && ($0.stage != .ended || $0.resolution.declinesWhenKnown) }.map(\.callID)
            .min()
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
                return giveUp(key)
            }
            return adopt(key, as: call)
        case .failure(let status, _)
        where (entry.stage != .ended || entry.resolution.declinesWhenKnown)
            && (status == 0 || status == 429 || status >= 500) && entry.resolution.attempts < Self.resolveAttemptLimit:
            entries[key]?.resolution = entry.resolution.counted()
            return [.schedule(callID: key, .resolveRetry, afterSeconds: Double(entry.resolution.attempts))]
        case .failure:
            return giveUp(key)
        case .call, .callAndToken, .mediaToken:
            return []
        }
    }

    /// No call to name: the placeholder ends as failed (an answer waiting for it fails too).
    private mutating func giveUp(_ key: String) -> [Effect] {
        let effects = entries[key]?.stage == .ended ? [] : finish(key, .failed, server: nil)
        entries[key]?.resolution = .known
        return effects
    }

    /// The placeholder `key` is `call`: the entry takes its id (keeping the UUID the call
    /// system knows), shows who rings, and goes on as any incoming call. One the user already
    /// ended is declined on the server now.
    mutating func adopt(_ key: String, as call: CallInfo) -> [Effect] {
        guard var entry = entries.removeValue(forKey: key) else { return [] }
        let waited = entry.resolution
        entry.callID = call.id
        entry.resolution = .known
        entry.update = CallUpdate(
            handle: call.scopeId, callerName: nil, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        entries[call.id] = entry
        byUUID[entry.uuid] = call.id
        if let index = endedOrder.firstIndex(of: key) { endedOrder[index] = call.id }
        guard entry.stage != .ended else {
            return waited.declinesWhenKnown ? withdraw(call.id, .decline) : []
        }
        var effects: [Effect] = [.notify(.incoming(callID: call.id, origin: .push))]
        if entry.system.awaitsReport {
            // CallKit may drop an update for a call whose report has not completed.
            entries[call.id]?.updateAfterReport = true
        } else {
            effects.insert(.reportUpdated(entry.uuid, entry.update), at: 0)
        }
        if let action = waited.answer {
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
