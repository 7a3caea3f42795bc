import Foundation
import SwitchboardWire

// How calls come and change: pushes, the event stream and server reads (incoming), and the calls
// the app places or joins (outgoing).
extension CallLedger {
    // MARK: Incoming: push and event stream

    /// A VoIP push (rule 1). `push` is nil when the payload had no usable call id: a placeholder
    /// under `placeholder` is reported and ended at once. Always reports unless `mustReport` is
    /// false and the call is already known.
    public mutating func pushReceived(
        _ push: IncomingCallPush?, mustReport: Bool, placeholder: UUID, resolvable: Bool = false
    ) -> [Effect] {
        if push == nil, resolvable { return unreadablePushReceived(placeholder: placeholder) }
        guard let push else {
            let key = "placeholder:" + placeholder.uuidString
            var entry = Entry(
                callID: key, uuid: placeholder, direction: .incoming, origin: .push,
                update: CallUpdate(handle: "unknown"), system: .reporting, stage: .ended)
            entry.queuedEnd = .failed
            entry.endReason = .failed
            insert(entry)
            remember(ended: key)
            return [reportIncoming(entry.uuid, entry.update)]
        }
        if let known = entries[push.callID] {
            if !mustReport { return [] }
            // A duplicate or stale push is still reported (rule 1)…
            var effects = [reportIncoming(known.uuid, known.update)]
            if known.stage == .ended, !known.system.awaitsReport, known.system != .live {
                // …and ended at once: the call system does not show it any more.
                var entry = known
                entry.system = .reportingAgain
                entry.queuedEnd = known.endReason ?? .failed
                entries[push.callID] = entry
            } else if known.stage == .ended, known.system == .live {
                effects.append(contentsOf: endInSystem(push.callID, known.endReason ?? .failed))
            }
            return effects
        }
        return beginIncoming(callID: push.callID, update: push.update, origin: .push)
    }

    /// A `call_changed` event named this call: re-read it (and, while our outgoing call rings,
    /// ask for a media token beside the re-read).
    public mutating func callChanged(_ callID: String) -> [Effect] {
        guard var entry = entries[callID], entry.direction == .outgoing, entry.stage == .dialing,
            !entry.earlyTokenInFlight
        else {
            return [.server(callID: callID, .fetch)]
        }
        entry.earlyTokenInFlight = true
        entry.earlyTokenAsks += 1
        entries[callID] = entry
        return [.server(callID: callID, .earlyMediaToken), .server(callID: callID, .fetch)]
    }

    /// A server read of a call (after a `call_changed` event, a push or a request).
    public mutating func callRead(_ call: CallInfo) -> [Effect] {
        guard var entry = entries[call.id] else {
            // Foreground incoming calls follow the push path (rule 3).
            guard call.state == .ringing, call.createdBy != userID,
                call.invitations.contains(where: { $0.userId == userID && $0.state == .ringing })
            else { return [] }
            // A push we could not decrypt already rings for a call we could not name: this is
            // it (one incoming-call screen, never two).
            if let key = unresolvedPlaceholder { return adopt(key, as: call) }
            let update = CallUpdate(
                handle: call.scopeId, callerName: nil, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
            return beginIncoming(callID: call.id, update: update, origin: .eventStream)
        }
        guard entry.stage != .ended else {
            // We left, but the server still has us in the call (an accept that landed late).
            // (Or our cancel lost the race with the callee's answer.)
            if entry.answer.acceptedHere || entry.direction == .outgoing, call.state == .active,
                Self.isPresent(userID, in: call)
            {
                return withdraw(call.id, .leave)
            }
            return []
        }
        if let reason = Self.endReason(of: call, for: userID, entry: entry) {
            return finish(call.id, reason, server: nil)
        }
        if call.state == .active {
            entry.serverActive = true
            entries[call.id] = entry
            if entry.direction == .outgoing, entry.stage == .dialing {
                entry.stage = .connecting
                entry.media.request()
                entries[call.id] = entry
                // Ask now even when the held early token is still on its way: its connection may
                // be the slow one (a lossy link), and whichever token comes first joins.
                return [.server(callID: call.id, .mediaToken)]
            }
        }
        return []
    }

    /// The call system answered a report.
    public mutating func reportCompleted(_ uuid: UUID, error: CallSystemError?) -> [Effect] {
        guard let callID = byUUID[uuid], var entry = entries[callID], entry.system.awaitsReport else {
            // A duplicate's report (refused with callUUIDAlreadyExists, which still counts).
            return []
        }
        if let error, error != .incomingCall(.callUUIDAlreadyExists) {
            entry.system = .refused
            entries[callID] = entry
            let refusal: IncomingCallError? = if case .incomingCall(let code) = error { code } else { nil }
            if entry.stage == .ended { return [] }
            // No call shows, but the server still rings us: decline there (no ghost call).
            return finish(callID, .failed, server: .decline, refusal: refusal)
        }
        if entry.system == .reportingAgain, error != nil {
            // The call system still shows it: the end we already sent is on its way.
            entry.system = .ended
            entry.queuedEnd = nil
            entries[callID] = entry
            return []
        }
        entry.system = .live
        let update = entry.updateAfterReport ? [Effect.reportUpdated(entry.uuid, entry.update)] : []
        entry.updateAfterReport = false
        entries[callID] = entry
        if let queued = entry.queuedEnd { return endInSystem(callID, queued) }
        return update
    }

    // MARK: Outgoing

    /// The server created our call: ask the call system to start it.
    public mutating func callCreated(_ call: CallInfo, handle: String) -> [Effect] {
        let uuid = CallIdentity.uuid(forCallID: call.id)
        if entries[call.id] != nil { return [] }
        let update = CallUpdate(handle: handle, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        var entry = Entry(
            callID: call.id, uuid: uuid, direction: .outgoing, origin: .dialed, update: update, system: .reporting,
            stage: .dialing)
        if call.state == .ended {
            // Busy at once: nothing to show in the call system.
            let reason = Self.endReason(serverReason: call.endReason)
            entry.system = .refused
            entry.stage = .ended
            entry.endReason = reason
            insert(entry)
            remember(ended: call.id)
            return [.notify(.ended(callID: call.id, reason: reason, refusal: nil))]
        }
        // Ask for the media token at once: the server holds the request until the callee answers.
        let early = call.state == .ringing
        entry.earlyTokenInFlight = early
        entry.earlyTokenAsks = early ? 1 : 0
        insert(entry)
        return [
            .requestTransaction(
                CallActionRequest(callUUID: uuid, kind: .start(handle: handle, hasVideo: update.hasVideo))),
            .notify(.dialing(callID: call.id)),
            .schedule(callID: call.id, .dialTimeout, afterSeconds: configuration.dialTimeout),
            .watch,
        ] + (early ? [.server(callID: call.id, .earlyMediaToken)] : []) + callRead(call)
    }

    /// The server let us join an active group call we were not in (`POST /calls/{id}/join`,
    /// after missing or declining it, or a meeting): it shows as an outgoing call that is already
    /// connecting. With `media` (the join redeemed a meeting's pre-authorisation) media joins
    /// with it at once; without, the media token is asked for as after any join.
    public mutating func callJoined(_ call: CallInfo, handle: String, media: MediaToken? = nil) -> [Effect] {
        if let existing = entries[call.id], existing.stage != .ended { return [] }
        let uuid = CallIdentity.uuid(forCallID: call.id)
        let update = CallUpdate(handle: handle, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        var entry = Entry(
            callID: call.id, uuid: uuid, direction: .outgoing, origin: .dialed, update: update, system: .reporting,
            stage: .connecting)
        entry.serverActive = true
        entry.media.request()
        entry.mediaJoinStarted = media != nil
        insert(entry)
        return [
            .requestTransaction(
                CallActionRequest(callUUID: uuid, kind: .start(handle: handle, hasVideo: update.hasVideo))),
            .notify(.joining(callID: call.id)),
            media.map { .joinMedia(callID: call.id, $0) } ?? .server(callID: call.id, .mediaToken),
            .watch,
        ]
    }

    /// The app asks to answer (its own button): through the call system, like a lock-screen answer.
    public func answerRequested(_ callID: String) -> [Effect] {
        guard let entry = entries[callID], entry.direction == .incoming, entry.stage == .ringing, entry.system == .live
        else { return [] }
        return [.requestTransaction(CallActionRequest(callUUID: entry.uuid, kind: .answer))]
    }

    /// The app asks to end (hang up, decline, cancel): through the call system when it shows
    /// the call, else directly.
    public mutating func endRequested(_ callID: String) -> [Effect] {
        guard let entry = entries[callID], entry.stage != .ended else { return [] }
        if entry.system == .live {
            return [.requestTransaction(CallActionRequest(callUUID: entry.uuid, kind: .end))]
        }
        // A report still pending: end it in the call system once the report completes.
        return endedLocally(callID, alsoInSystem: entry.system == .reporting)
    }

    /// The app asks to mute or unmute.
    public func muteRequested(_ callID: String, muted: Bool) -> [Effect] {
        guard let entry = entries[callID], entry.stage != .ended, entry.system == .live else { return [] }
        return [.requestTransaction(CallActionRequest(callUUID: entry.uuid, kind: .setMuted(muted)))]
    }

    /// The call system answered a transaction request.
    public mutating func transactionCompleted(_ request: CallActionRequest, error: CallSystemError?) -> [Effect] {
        guard let callID = byUUID[request.callUUID], var entry = entries[callID] else { return [] }
        switch request.kind {
        case .start:
            if error == nil {
                if entry.system == .reporting {
                    entry.system = .live
                    entries[callID] = entry
                    if let queued = entry.queuedEnd { return endInSystem(callID, queued) }
                }
                return []
            }
            // Refused (maximum call groups…): no call shows; do not leave the callee ringing
            // (or, for a call we joined, the others thinking we are there).
            entry.system = .refused
            entries[callID] = entry
            if entry.stage == .ended { return [] }
            return finish(callID, .failed, server: entry.serverActive ? .leave : .cancel)
        case .end:
            guard let error else { return [] }
            guard error == .transaction(.unknownCallUUID) else {
                // Refused for another reason: the call still shows; report its end ourselves.
                return endedLocally(callID, alsoInSystem: true)
            }
            // The call system does not know the call (any more): end it here and on the server.
            if entry.system == .live {
                entry.system = .ended
                entries[callID] = entry
            }
            return endedLocally(callID)
        case .answer, .setMuted, .setHeld:
            return []
        }
    }
}
