import Foundation
import SwitchboardWire

/// The coordinator's decisions (SPEC §4 rules 1–7) as a pure state machine: every input — a
/// push, a server read, a call-system callback, a timer — returns the effects to perform, in
/// order. Time and ids come in as inputs; nothing here does I/O.
///
/// Invariants it keeps:
/// - a call is reported to the call system once per push or event and ended there exactly once,
///   with the UUID it was reported under (an end that arrives while a report is pending waits
///   for the report's completion);
/// - every action the call system hands over is completed exactly once (or timed out);
/// - audio starts only when the session is active *and* the call's media engine exists.
public struct CallLedger: Sendable {
    /// Deadlines, in seconds.
    public struct Configuration: Sendable, Equatable {
        /// From the answer action to joined media (rule 5).
        public var answerDeadline: Double
        /// An outgoing call neither answered nor rejected ends after this (rule 6).
        public var dialTimeout: Double

        public init(answerDeadline: Double = 10, dialTimeout: Double = 45) {
            self.answerDeadline = answerDeadline
            self.dialTimeout = dialTimeout
        }
    }

    public enum Direction: String, Sendable, Equatable { case incoming, outgoing }

    /// How a call came to this device.
    public enum Origin: String, Sendable, Equatable { case push, eventStream = "event_stream", dialed }

    /// Where the call stands in the call system.
    public enum SystemState: String, Sendable, Equatable {
        /// `reportNewIncomingCall` or the start transaction is pending.
        case reporting
        /// The call system shows it.
        case live
        /// Ended in the call system (reported or by an end action).
        case ended
        /// The call system refused it: it never showed.
        case refused
    }

    /// Where the call stands for the user.
    public enum Stage: String, Sendable, Equatable { case ringing, answering, dialing, connecting, active, ended }

    /// A request to the server.
    public enum ServerRequest: Sendable, Equatable {
        case fetch, accept, decline, leave, cancel, mediaToken
        /// A media token asked for on a `call_changed` while our outgoing call rings, beside the
        /// re-read: when the change was the answer, it saves a round trip (weak networks).
        case earlyMediaToken
    }

    /// What a server request came back with.
    public enum ServerResult: Sendable, Equatable {
        case call(CallInfo)
        case mediaToken(MediaToken)
        /// The server answered with an error code (`status` 0: no answer).
        case failure(status: Int, code: String)
    }

    public enum Timer: String, Sendable, Equatable { case answerDeadline, dialTimeout, withdrawalRetry }

    /// What the app hears about (its UI and logs).
    public enum Notice: Sendable, Equatable {
        case incoming(callID: String, origin: Origin)
        case dialing(callID: String)
        /// Joining an active group call (after missing or declining it).
        case joining(callID: String)
        case connected(callID: String)
        case audioStarted(callID: String)
        case audioStopped(callID: String)
        /// `reason` is nil when the user ended it on this device; `refusal` is set when the call
        /// system refused the report (Do Not Disturb, block list…).
        case ended(callID: String, reason: CallEndReason?, refusal: IncomingCallError?)
        /// The server refused the session token (401) while calls are live: the coordinator
        /// stopped following them. Refresh the session and pass the new token to
        /// `use(backend:)`; the coordinator then follows and re-reads them. Once per token.
        case tokenRejected
    }

    /// What to do, in order.
    public enum Effect: Sendable, Equatable {
        /// Report to the call system; `report` names the completion that ends the push handler.
        case reportIncoming(UUID, CallUpdate, report: Int)
        case reportConnecting(UUID)
        case reportConnected(UUID)
        case reportEnded(UUID, CallEndReason)
        case requestTransaction(CallActionRequest)
        case fulfil(UUID)
        case fail(UUID)
        case server(callID: String, ServerRequest)
        case joinMedia(callID: String, MediaToken)
        case leaveMedia(callID: String)
        case startAudio(callID: String)
        case stopAudio(callID: String)
        case setMuted(callID: String, Bool)
        case schedule(callID: String, Timer, afterSeconds: Double)
        /// Keep following the server's events while calls are live.
        case watch
        case notify(Notice)
    }

    /// One call as this device knows it.
    public struct Entry: Sendable, Equatable {
        public let callID: String
        public let uuid: UUID
        public let direction: Direction
        public let origin: Origin
        public var update: CallUpdate
        public var system: SystemState
        public var stage: Stage
        /// The reason the call ended with, once it has.
        public var endReason: CallEndReason?
        /// An end that waits for a pending report.
        var queuedEnd: CallEndReason?
        /// The answer or start action still to complete.
        var pendingAction: UUID?
        /// What this device answered (so the server's "accepted" is not "elsewhere").
        var answer = Answer.undecided
        /// A decline, leave or cancel the server has not confirmed yet.
        var withdrawal: Withdrawal?
        var serverActive = false
        var media = Media.notRequested
        var userMuted = false
        var held = false
        var earlyTokenInFlight = false
        /// A stale push re-reported this ended call (to end it again at once).
        var staleReport = false
    }

    public let configuration: Configuration
    /// The signed-in user.
    public let userID: String
    public private(set) var entries: [String: Entry] = [:]
    /// Ended calls, oldest first, so old ones can be forgotten.
    private var endedOrder: [String] = []
    private var byUUID: [UUID: String] = [:]
    private var audioSessionActive = false
    private var nextReport = 0
    /// Ended calls kept to recognise duplicate and stale pushes.
    static let endedMemory = 64

    public init(userID: String, configuration: Configuration = Configuration()) {
        self.userID = userID
        self.configuration = configuration
    }

    public func entry(uuid: UUID) -> Entry? { byUUID[uuid].flatMap { entries[$0] } }

    /// Calls not yet ended.
    public var liveCallIDs: [String] { entries.values.filter { $0.stage != .ended }.map(\.callID).sorted() }

    // MARK: Incoming: push and event stream

    /// A VoIP push (rule 1). `push` is nil when the payload had no usable call id: a placeholder
    /// under `placeholder` is reported and ended at once. Always reports unless `mustReport` is
    /// false and the call is already known.
    public mutating func pushReceived(_ push: IncomingCallPush?, mustReport: Bool, placeholder: UUID) -> [Effect] {
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
            if known.stage == .ended, known.system != .reporting, known.system != .live {
                // …and ended at once: the call system does not show it any more.
                var entry = known
                entry.system = .reporting
                entry.queuedEnd = known.endReason ?? .failed
                entry.staleReport = true
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
        guard var entry = entries[callID], entry.direction == .outgoing, entry.stage == .dialing, !entry.earlyTokenInFlight else {
            return [.server(callID: callID, .fetch)]
        }
        entry.earlyTokenInFlight = true
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
            let update = CallUpdate(handle: call.scopeId, callerName: nil, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
            return beginIncoming(callID: call.id, update: update, origin: .eventStream)
        }
        guard entry.stage != .ended else {
            // We left, but the server still has us in the call (an accept that landed late).
            // (Or our cancel lost the race with the callee's answer.)
            if entry.answer.acceptedHere || entry.direction == .outgoing, call.state == .active, Self.isPresent(userID, in: call) {
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
                // An early token on its way decides: it joins, or on failure asks again.
                return entry.earlyTokenInFlight ? [] : [.server(callID: call.id, .mediaToken)]
            }
        }
        return []
    }

    /// The call system answered a report.
    public mutating func reportCompleted(_ uuid: UUID, error: CallSystemError?) -> [Effect] {
        guard let callID = byUUID[uuid], var entry = entries[callID], entry.system == .reporting else {
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
        if entry.staleReport, error != nil {
            // The call system still shows it: the end we already sent is on its way.
            entry.staleReport = false
            entry.system = .ended
            entry.queuedEnd = nil
            entries[callID] = entry
            return []
        }
        entry.staleReport = false
        entry.system = .live
        entries[callID] = entry
        if let queued = entry.queuedEnd { return endInSystem(callID, queued) }
        return []
    }

    // MARK: Outgoing

    /// The server created our call: ask the call system to start it.
    public mutating func callCreated(_ call: CallInfo, handle: String) -> [Effect] {
        let uuid = CallIdentity.uuid(forCallID: call.id)
        if entries[call.id] != nil { return [] }
        let update = CallUpdate(handle: handle, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        var entry = Entry(callID: call.id, uuid: uuid, direction: .outgoing, origin: .dialed, update: update, system: .reporting, stage: .dialing)
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
        insert(entry)
        return [
            .requestTransaction(CallActionRequest(callUUID: uuid, kind: .start(handle: handle, hasVideo: update.hasVideo))),
            .notify(.dialing(callID: call.id)),
            .schedule(callID: call.id, .dialTimeout, afterSeconds: configuration.dialTimeout),
            .watch,
        ] + callRead(call)
    }

    /// The server let us join an active group call we were not in (`POST /calls/{id}/join`,
    /// after missing or declining it): it shows as an outgoing call that is already connecting.
    public mutating func callJoined(_ call: CallInfo, handle: String) -> [Effect] {
        if let existing = entries[call.id], existing.stage != .ended { return [] }
        let uuid = CallIdentity.uuid(forCallID: call.id)
        let update = CallUpdate(handle: handle, hasVideo: call.mode == .video, isGroup: call.scopeKind == .group)
        var entry = Entry(callID: call.id, uuid: uuid, direction: .outgoing, origin: .dialed, update: update, system: .reporting, stage: .connecting)
        entry.serverActive = true
        entry.media.request()
        insert(entry)
        return [
            .requestTransaction(CallActionRequest(callUUID: uuid, kind: .start(handle: handle, hasVideo: update.hasVideo))),
            .notify(.joining(callID: call.id)),
            .server(callID: call.id, .mediaToken),
            .watch,
        ]
    }

    /// The app asks to answer (its own button): through the call system, like a lock-screen answer.
    public func answerRequested(_ callID: String) -> [Effect] {
        guard let entry = entries[callID], entry.direction == .incoming, entry.stage == .ringing, entry.system == .live else { return [] }
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
            entry.stage = .answering
            entry.pendingAction = id
            entry.answer = .accepting
            entries[callID] = entry
            return [
                .server(callID: callID, .accept),
                .schedule(callID: callID, .answerDeadline, afterSeconds: configuration.answerDeadline),
            ]
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
            entry.userMuted = muted
            entries[callID] = entry
            return [.setMuted(callID: callID, entry.userMuted || entry.held), .fulfil(id)]
        case .setHeld(let held):
            // On hold the microphone is closed; off hold it is as the user left it.
            guard entry.stage != .ended else { return [.fail(id)] }
            entry.held = held
            entries[callID] = entry
            return [.setMuted(callID: callID, entry.userMuted || entry.held), .fulfil(id)]
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

    // MARK: Server and media results

    /// A server request came back.
    public mutating func serverAnswered(_ callID: String, _ request: ServerRequest, _ result: ServerResult) -> [Effect] {
        guard let entry = entries[callID] else {
            if case .call(let call) = result { return callRead(call) }
            return []
        }
        switch (request, result) {
        case (.earlyMediaToken, .mediaToken(let token)):
            // Only a participant of an active call gets one: the callee answered.
            guard var entry = entries[callID] else { return [] }
            entry.earlyTokenInFlight = false
            guard entry.direction == .outgoing, entry.stage == .dialing || entry.stage == .connecting, !entry.media.joined else {
                entries[callID] = entry
                return []
            }
            entry.stage = .connecting
            entry.serverActive = true
            entry.media.request()
            entries[callID] = entry
            return [.joinMedia(callID: callID, token)]
        case (.earlyMediaToken, .failure):
            // Too early (still ringing when it arrived). If the re-read has since seen the answer,
            // ask properly now.
            entries[callID]?.earlyTokenInFlight = false
            guard entry.stage == .connecting, !entry.media.joined else { return [] }
            return [.server(callID: callID, .mediaToken)]
        case (.mediaToken, .mediaToken(let token)):
            guard entry.stage == .answering || entry.stage == .connecting else { return [] }
            return [.joinMedia(callID: callID, token)]
        case (.mediaToken, .failure):
            guard entry.stage == .answering || entry.stage == .connecting else { return [] }
            return failCall(callID)
        case (.accept, .call(let call)):
            entries[callID]?.answer.serverAccepted()
            var effects = callRead(call)
            if entries[callID]?.stage == .answering, entries[callID]?.media == .notRequested {
                entries[callID]?.media.request()
                effects.append(.server(callID: callID, .mediaToken))
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
        case (_, .call(let call)):
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
        if entry.userMuted || entry.held { effects.append(.setMuted(callID: callID, true)) }
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
            guard entry.stage == .answering else { return [] }
            return failCall(callID)
        case .dialTimeout:
            guard entry.direction == .outgoing, entry.stage == .dialing else { return [] }
            return finish(callID, .unanswered, server: .cancel)
        case .withdrawalRetry:
            guard let withdrawal = entry.withdrawal else { return [] }
            entries[callID]?.withdrawal?.attempts += 1
            return [.server(callID: callID, withdrawal.request)]
        }
    }

    // MARK: Helpers

    /// The user ended the call here (or the call system dropped it): tell the server what that
    /// means at this stage.
    private mutating func endedLocally(_ callID: String, alsoInSystem: Bool = false) -> [Effect] {
        guard let entry = entries[callID], entry.stage != .ended else { return [] }
        return finish(callID, .remoteEnded, server: withdrawal(for: callID), local: true, endInSystem: alsoInSystem)
    }

    private mutating func beginIncoming(callID: String, update: CallUpdate, origin: Origin) -> [Effect] {
        let uuid = CallIdentity.uuid(forCallID: callID)
        insert(Entry(callID: callID, uuid: uuid, direction: .incoming, origin: origin, update: update, system: .reporting, stage: .ringing))
        return [
            reportIncoming(uuid, update),
            .notify(.incoming(callID: callID, origin: origin)),
            // Is it still ringing? (A stale push is reported, then ended.)
            .server(callID: callID, .fetch),
            .watch,
        ]
    }

    private mutating func reportIncoming(_ uuid: UUID, _ update: CallUpdate) -> Effect {
        nextReport += 1
        return .reportIncoming(uuid, update, report: nextReport)
    }

    /// What tells the server we are out: a callee whose accept the server has not confirmed
    /// declines (a failed accept left the invitation ringing; an accept that landed after all is
    /// left when a re-read shows it), a caller cancels until the call is answered, everyone else
    /// leaves.
    private mutating func withdrawal(for callID: String) -> ServerRequest {
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
    private mutating func withdraw(_ callID: String, _ request: ServerRequest) -> [Effect] {
        // One still waiting for a new token keeps waiting: this one goes with that token too.
        let awaitsSession = entries[callID]?.withdrawal?.awaitsSession ?? false
        entries[callID]?.withdrawal = Withdrawal(request: request, attempts: 1, awaitsSession: awaitsSession)
        return [.server(callID: callID, request)]
    }

    /// Retries for a withdrawal the server could not take (503, 429, no answer), with backoff.
    static let withdrawalRetries = 5

    /// A local failure (answer or media): the action fails, the call ends as failed, the server
    /// is told, so nothing is left behind (the zombie of rule 4).
    private mutating func failCall(_ callID: String) -> [Effect] {
        guard entries[callID] != nil else { return [] }
        return finish(callID, .failed, server: withdrawal(for: callID))
    }

    /// Ends a call everywhere, once: the pending action fails, the call system hears the reason
    /// (unless `local`: the user ended it here, usually through an end action that already ended
    /// it there — `endInSystem` overrides), media and audio stop, the server is told when
    /// `server` is set.
    private mutating func finish(
        _ callID: String, _ reason: CallEndReason, server: ServerRequest?, local: Bool = false, endInSystem reportEnd: Bool? = nil,
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
        if let server { effects += withdraw(callID, server) }
        effects.append(.notify(.ended(callID: callID, reason: local ? nil : reason, refusal: refusal)))
        return effects
    }

    /// Reports the end to the call system now, or once the pending report completes.
    private mutating func endInSystem(_ callID: String, _ reason: CallEndReason) -> [Effect] {
        guard var entry = entries[callID] else { return [] }
        switch entry.system {
        case .reporting:
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

    private mutating func startAudioIfReady() -> [Effect] {
        guard audioSessionActive else { return [] }
        var effects: [Effect] = []
        for (callID, entry) in entries where entry.media == .joined && entry.stage == .active {
            entries[callID]?.media = .playing
            effects += [.startAudio(callID: callID), .notify(.audioStarted(callID: callID))]
        }
        return effects
    }

    private mutating func insert(_ entry: Entry) {
        entries[entry.callID] = entry
        byUUID[entry.uuid] = entry.callID
    }

    private mutating func remember(ended callID: String) {
        endedOrder.append(callID)
        while endedOrder.count > Self.endedMemory {
            let old = endedOrder.removeFirst()
            if let entry = entries[old], entry.stage == .ended, entry.system != .reporting {
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
           call.participants.contains(where: { $0.userId == userID }) {
            return .remoteEnded
        }
        guard call.state == .ended else { return nil }
        return endReason(serverReason: call.endReason)
    }

    /// The server's end reason as the call system's (documented in the README).
    public static func endReason(serverReason: CallInfo.EndReason?) -> CallEndReason {
        switch serverReason {
        case .missed: .unanswered
        case .connectionLost: .failed
        case .declined, .completed, .cancelled, .busy, .unfriended, .blocked, .groupDissolved: .remoteEnded
        case .unknown, nil: .failed
        }
    }
}
