import Foundation
import SwitchboardWire

/// The one object the app talks to about calls. It takes VoIP pushes, the event stream's
/// events and the user's actions, and keeps the call system (CallKit), the server and the
/// media session in agreement (SPEC §4 rules 1–7).
///
/// It is the call system's delegate and the push handler: decisions are made by `CallLedger`
/// under a lock, and the effects are performed outside it, in order.
///
/// ```swift
/// let coordinator = CallCoordinator(userID: session.user.id, backend: client, callSystem: callKit,
///                                   media: { callID in LiveKitMedia(callID) })
/// // PushKit: coordinator.handleVoIPPush(payload.dictionaryPayload, mustReport: true, completion: completion)
/// // Event feed: await coordinator.handle(events: events)
/// ```
public final class CallCoordinator: CallSystemDelegate, VoIPPushHandling, Sendable {
    public typealias Notice = CallLedger.Notice

    /// The server, as of the newest token (see `use(backend:)`).
    var backend: any CallBackend { state.withLock { $0.backend } }
    let callSystem: any CallSystem
    let makeMedia: @Sendable (String) -> any MediaSession
    let clock: any CallClock
    let onNotice: @Sendable (Notice) -> Void
    /// Opens encrypted VoIP payloads (a device that registered a payload key); nil: none.
    let payloadDecryptor: (any VoIPPayloadDecrypting)?
    /// Reachability and reconnect plans (SPEC §4 rule 12); nil: the watcher just retries.
    let reconnect: ReconnectMonitor?
    /// Memory-pressure levels: media sheds what the plan says; `fatal` ends live calls.
    let memoryPressure: MemoryPressureMonitor?
    /// Where joins find meetings' pre-authorisations (a ``MeetingPreloader``); nil: none.
    let preauthorizations: (any CallPreauthorizationSource)?
    /// Whether the answer deadline is the adaptive one (the configuration opted in).
    let adaptiveDeadline: Bool
    /// Where it comes from when the app named a monitor; else the current backend's.
    let networkQuality: NetworkQualityMonitor?
    /// The app server's own signaling, for calls rung through the push gateway; nil: none.
    let gateway: (any GatewayCallBackend)?
    /// While an answer waits under an adaptive deadline, it is re-evaluated this often (seconds).
    static let deadlineRecheck = 0.25

    struct State {
        var ledger: CallLedger
        var backend: any CallBackend
        /// Bumped by `use(backend:)`: a 401 for a request sent with an older token is no
        /// verdict on the current one.
        var generation = 0
        /// The token generation the app was told is refused (told once per token).
        var rejectedGeneration: Int?
        /// PushKit completions, by the report that releases them.
        var pushCompletions: [Int: @Sendable () -> Void] = [:]
        /// Actions handed over by the call system and not completed yet.
        var actions: [UUID: CallSystemAction] = [:]
        var media: [String: any MediaSession] = [:]
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
        var watcher: Task<Void, Never>?
        var closed = false
        /// The adaptive answer deadline watched per call (a newer one supersedes it).
        var deadlines: [String: Int] = [:]
        var nextDeadline = 0
        /// Calls rung through the push gateway, by call id: answered over `gateway`.
        var gatewayCalls: [String: GatewayCall] = [:]
    }

    let state: LockedState<State>

    /// - Parameters:
    ///   - userID: the signed-in user (to read invitations).
    ///   - media: makes the media session for a call id.
    ///   - payloadDecryptor: opens encrypted VoIP payloads, when the device registered a
    ///     payload key. A push it cannot open still rings, as an unknown caller, and is
    ///     resolved from the server (`/calls/active`, the event stream).
    ///   - reconnect: where reachability is reported; after an outage of 30 s or more the
    ///     coordinator re-reads the active calls, and its watcher polls again the moment the
    ///     network is back (rule 12).
    ///   - networkQuality: where an adaptive answer deadline (`configuration.adaptiveAnswerDeadline`)
    ///     comes from; by default the current backend's (`SwitchboardClient.networkQuality`).
    ///     With neither, the fixed `answerDeadline` applies.
    ///   - memoryPressure: each level change is passed to every call's media session
    ///     (``MediaSession/shed(_:)``); at `fatal` the live calls end cleanly, as failed.
    ///   - preauthorizations: where ``joinCall(_:handle:groupID:preauthorization:)`` looks for
    ///     a meeting's pre-authorisation (a ``MeetingPreloader``), so the join's answer brings
    ///     the media token.
    ///   - gateway: the app server's own signaling, for calls it rings through the push gateway
    ///     (pushes whose scope is ``SwitchboardWire/ScopeKind/gateway``). Without it such a
    ///     call is reported, then ended as failed. An app whose users have no Switchboard
    ///     account passes ``GatewayOnlyBackend`` as `backend`.
    ///   - onNotice: what happened, for the app's UI and logs (any thread).
    public init(
        userID: String, backend: any CallBackend, callSystem: any CallSystem,
        media: @escaping @Sendable (String) -> any MediaSession,
        clock: any CallClock = SystemCallClock(),
        configuration: CallLedger.Configuration = CallLedger.Configuration(),
        payloadDecryptor: (any VoIPPayloadDecrypting)? = nil,
        reconnect: ReconnectMonitor? = nil,
        networkQuality: NetworkQualityMonitor? = nil,
        memoryPressure: MemoryPressureMonitor? = nil,
        preauthorizations: (any CallPreauthorizationSource)? = nil,
        gateway: (any GatewayCallBackend)? = nil,
        onNotice: @escaping @Sendable (Notice) -> Void = { _ in }
    ) {
        self.gateway = gateway
        self.memoryPressure = memoryPressure
        self.preauthorizations = preauthorizations
        adaptiveDeadline = configuration.adaptiveAnswerDeadline
        self.networkQuality = networkQuality
        self.payloadDecryptor = payloadDecryptor
        self.reconnect = reconnect
        self.callSystem = callSystem
        self.makeMedia = media
        self.clock = clock
        self.onNotice = onNotice
        state = LockedState(State(ledger: CallLedger(userID: userID, configuration: configuration), backend: backend))
        callSystem.setDelegate(self)
        reconnect?.onReconnect { [weak self] plan in self?.reconnected(plan) }
        memoryPressure?.onChange { [weak self] plan in self?.memoryPressureChanged(plan) }
    }

    // MARK: Inputs from the app

    /// A VoIP push: reported to the call system before this returns; `completion` runs once the
    /// report completed (rule 1).
    public func handleVoIPPush(
        _ payload: [AnyHashable: Any], mustReport: Bool = true, completion: @escaping @Sendable () -> Void
    ) {
        // An encrypted payload is opened here, before the report; one that cannot be opened is
        // still reported (an unknown caller) and resolved from the server.
        var push: IncomingCallPush?
        var unreadable = false
        if EncryptedVoIPPush.isEncrypted(payload) {
            let opened = EncryptedVoIPPush.open(payload, with: payloadDecryptor)
            push = opened.flatMap(IncomingCallPush.init(dictionary:))
            unreadable = push == nil
        } else {
            push = IncomingCallPush(dictionary: payload)
        }
        let placeholder = UUID()
        let gatewayCall = push?.gatewayCall
        let effects = state.withLock { state -> [CallLedger.Effect] in
            if let gatewayCall { state.gatewayCalls[gatewayCall.callID] = gatewayCall }
            let effects = state.ledger.pushReceived(
                push, mustReport: mustReport || unreadable, placeholder: placeholder, resolvable: unreadable)
            for case .reportIncoming(_, _, let report) in effects.prefix(1) {
                state.pushCompletions[report] = completion
            }
            return effects
        }
        guard case .reportIncoming? = effects.first else {
            completion()
            return
        }
        perform(effects)
        if let gatewayCall {
            // Read at once (a stale push rings a call that is already over), then now and again.
            spawn { [self] in await request(gatewayCall.callID, .fetch) }
            recheckGatewayCall(gatewayCall.callID)
            return
        }
        // Reported first (rule 1); then the connections the answer will need start opening
        // while the phone rings.
        backend.warmUp()
    }

    /// Events from the app's event feed: calls that changed are re-read (a foreground incoming
    /// call takes the push's path). Returns when they were handled, so the feed may advance.
    public func handle(events: [Event]) async {
        var seen = Set<String>()
        for event in events where event.kind == .callChanged {
            guard let callID = event.callId, seen.insert(callID).inserted else { continue }
            let effects = state.withLock { $0.ledger.callChanged(callID) }
            // The re-read is awaited (the feed advances after it); anything else runs beside it.
            perform(effects.filter { $0 != .server(callID: callID, .fetch) })
            if effects.contains(.server(callID: callID, .fetch)) { await request(callID, .fetch) }
        }
    }

    /// Places a call: the server first (its id names the call), then the call system's start
    /// transaction. Returns the call id.
    @discardableResult
    public func startCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, handle: String, clientID: UUID = UUID()
    ) async throws -> String {
        let call = try await backend.createCall(scopeKind: scopeKind, scopeID: scopeID, mode: mode, clientID: clientID)
        input { $0.callCreated(call, handle: handle) }
        return call.id
    }

    /// Joins an active group call the user is not in (missed or declined earlier): the server
    /// first, then the call system's start transaction and media.
    ///
    /// A meeting's pre-authorisation — `preauthorization`, else one the `preauthorizations`
    /// source holds for this call (or, with `groupID`, for that group's meeting) — goes with
    /// the join; when the server accepts it the answer carries the media token and media joins
    /// without asking for one. When it does not (expired, used, another call's) the join goes
    /// on as without it and the token is asked for as usual: the user notices nothing.
    public func joinCall(
        _ callID: String, handle: String, groupID: String? = nil, preauthorization: String? = nil
    ) async throws {
        let taken = preauthorization == nil ? await preauthorizations?.take(forCall: callID, groupID: groupID) : nil
        let answer: CallWithMedia
        if let token = preauthorization ?? taken?.token {
            do {
                answer = try await backend.join(callID, preauthorization: token)
            } catch {
                // Used or not, the source may get a fresh one for the user's next attempt.
                if let taken { await preauthorizations?.joinFailed(with: taken) }
                throw error
            }
        } else {
            answer = CallWithMedia(call: try await backend.perform(.join, onCall: callID), media: nil)
        }
        input { $0.callJoined(answer.call, handle: handle, media: answer.media) }
    }

    /// The app's own answer button: goes through the call system like a lock-screen answer.
    public func answer(_ callID: String) { input { $0.answerRequested(callID) } }

    /// Hang up, decline or cancel.
    public func end(_ callID: String) { input { $0.endRequested(callID) } }

    public func setMuted(_ callID: String, _ muted: Bool) { input { $0.muteRequested(callID, muted: muted) } }

    /// The same user's session got a new token (a refresh or a new login): requests from now on
    /// use `backend`. A different user needs a new coordinator.
    ///
    /// Live calls are followed again with it (the event watcher stops when the server refuses
    /// a token, see `Notice.tokenRejected`) and re-read, since events may have been missed
    /// meanwhile; a decline, leave or cancel the old token could not deliver is sent again.
    public func use(backend: any CallBackend) {
        state.withLock { state in
            state.backend = backend
            state.generation += 1
        }
        input { $0.sessionRenewed() }
    }

    /// The network is back after an outage (``ReconnectMonitor`` calls this): unless the plan
    /// only resumes the feed, the active calls are re-read (`GET /calls/active`) — a call that
    /// rang meanwhile is reported, one that ended meanwhile ends — and each live call too.
    public func reconnected(_ plan: ReconnectPlanner.Plan) {
        guard plan.rereadsCalls else { return }
        spawn { [self] in
            do {
                let calls = try await backend.activeCalls()
                input { $0.activeCallsRead(calls) }
            } catch {
                // No list: re-read the calls we know of, one by one.
                let live = liveCallIDs.filter { !$0.hasPrefix(CallLedger.placeholderPrefix) }
                for callID in live { await request(callID, .fetch) }
            }
        }
    }

    /// The memory-pressure level changed (``MemoryPressureMonitor`` calls this): every call's
    /// media session sheds what `plan` says, and at `fatal` every live call ends now — its
    /// pending action failed, reported to the call system as failed once, the server told —
    /// instead of the process being killed mid-call and the call left behind.
    public func memoryPressureChanged(_ plan: MemoryShedPlan) {
        let sessions = state.withLock { Array($0.media.values) }
        sessions.forEach { $0.shed(plan) }
        if plan.endsCalls { input { $0.memoryExhausted() } }
    }

    /// The coordinator's view of a call.
    public func call(_ callID: String) -> CallLedger.Entry? { state.withLock { $0.ledger.entries[callID] } }

    /// Calls not yet ended.
    public var liveCallIDs: [String] { state.withLock { $0.ledger.liveCallIDs } }

    /// Waits until no request or media join the coordinator started is in flight (the
    /// watcher's long poll aside): for an app's tests on a manual clock, so they wait for the
    /// coordinator's work itself instead of sleeping. With `SimulatedCallSystem`, settle it
    /// too (`ManualClock.run(seconds:settling:)`), as the callbacks it queues start more work.
    public func settle() async {
        while true {
            let tasks = state.withLock { Array($0.tasks.values) }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }

    /// Stops following events and leaves media (the app is going away).
    public func shutdown() {
        let (watcher, tasks, media) = state.withLock { state in
            state.closed = true
            defer {
                state.watcher = nil
                state.media = [:]
            }
            return (state.watcher, Array(state.tasks.values), Array(state.media.values))
        }
        watcher?.cancel()
        tasks.forEach { $0.cancel() }
        media.forEach { $0.leave() }
    }

    // MARK: CallSystemDelegate

    public func callSystemDidReset() {
        // Actions handed over before a reset are void: CallKit wants none of them completed.
        state.withLock { $0.actions.removeAll() }
        input { $0.callSystemReset() }
    }

    public func callSystem(perform action: CallSystemAction) {
        state.withLock { $0.actions[action.id] = action }
        input { $0.actionPerformed(id: action.id, CallActionRequest(callUUID: action.callUUID, kind: action.kind)) }
    }

    public func callSystem(timedOutPerforming action: CallSystemAction) {
        state.withLock { _ = $0.actions.removeValue(forKey: action.id) }
        input {
            $0.actionTimedOut(id: action.id, request: CallActionRequest(callUUID: action.callUUID, kind: action.kind))
        }
    }

    public func callSystemDidActivateAudioSession() { input { $0.audioSessionActivated() } }

    public func callSystemDidDeactivateAudioSession() { input { $0.audioSessionDeactivated() } }

    // MARK: Performing effects

    func input(_ decide: (inout CallLedger) -> [CallLedger.Effect]) {
        let effects = state.withLock { decide(&$0.ledger) }
        perform(effects)
    }

    private func perform(_ effects: [CallLedger.Effect]) {
        // A watcher that starts now re-reads every live call once it holds a cursor, so a re-read
        // asked for beside it would only repeat that request.
        let freshWatcher = effects.contains(.watch) && startWatcher()
        for effect in effects {
            if case .server(_, .fetch) = effect, freshWatcher { continue }
            perform(effect)
        }
    }

    private func perform(_ effect: CallLedger.Effect) {
        switch effect {
        case .reportIncoming(let uuid, let update, let report):
            callSystem.reportNewIncomingCall(uuid: uuid, update: update) { [self] error in
                input { $0.reportCompleted(uuid, error: error) }
                let completion = state.withLock { $0.pushCompletions.removeValue(forKey: report) }
                completion?()
            }
        case .reportConnecting(let uuid):
            callSystem.reportOutgoingCallStartedConnecting(uuid: uuid, at: clock.now)
        case .reportConnected(let uuid):
            callSystem.reportOutgoingCallConnected(uuid: uuid, at: clock.now)
        case .reportEnded(let uuid, let reason):
            callSystem.reportCallEnded(uuid: uuid, at: clock.now, reason: reason)
        case .reportUpdated(let uuid, let update):
            callSystem.reportCallUpdated(uuid: uuid, update: update)
        case .requestTransaction(let request):
            callSystem.requestTransaction(request) { [self] error in
                input { $0.transactionCompleted(request, error: error) }
            }
        case .fulfil(let id):
            state.withLock { $0.actions.removeValue(forKey: id) }?.fulfill()
        case .fail(let id):
            state.withLock { $0.actions.removeValue(forKey: id) }?.fail()
        case .server(let callID, let request):
            spawn { [self] in await self.request(callID, request) }
        case .joinMedia(let callID, let token):
            let session = makeMedia(callID)
            // A session that starts under pressure keeps to the current plan from the start.
            if let plan = memoryPressure?.plan, plan.level > .safe { session.shed(plan) }
            let previous = state.withLock { state -> (any MediaSession)? in
                defer { state.media[callID] = session }
                return state.media[callID]
            }
            previous?.leave()
            spawn { [self] in
                let joined: Bool
                do {
                    try await session.join(url: token.url, token: token.token)
                    joined = true
                } catch {
                    joined = false
                }
                input { $0.mediaJoined(callID, succeeded: joined) }
            }
        case .leaveMedia(let callID):
            state.withLock { $0.media.removeValue(forKey: callID) }?.leave()
        case .startAudio(let callID):
            media(callID)?.startAudio()
        case .stopAudio(let callID):
            media(callID)?.stopAudio()
        case .setMuted(let callID, let muted):
            media(callID)?.setMuted(muted)
        case .schedule(let callID, .answerDeadline, _) where adaptiveDeadline && quality != nil:
            watchAnswerDeadline(callID)
        case .schedule(let callID, let timer, let seconds):
            clock.schedule(after: .seconds(seconds)) { [self] in input { $0.timerFired(callID, timer) } }
        case .watch:
            startWatcher()
        case .notify(let notice):
            onNotice(notice)
        }
    }

    private func media(_ callID: String) -> (any MediaSession)? { state.withLock { $0.media[callID] } }

    /// The adaptive answer deadline (rule 12): computed now, as the answer action is processed,
    /// and again every ``deadlineRecheck`` while the answer waits, so a network that gets worse
    /// (or better) while the phone rings moves it. When the time waited reaches it, the ledger
    /// hears `answerDeadline`: the action fails and the call ends as failed, once.
    /// The network quality the adaptive deadline is read from: the app's monitor, or the one of
    /// the backend in use (a `SwitchboardClient` made for a new token may bring a new one).
    private var quality: NetworkQualityMonitor? { networkQuality ?? backend.networkQualityMonitor }

    private func watchAnswerDeadline(_ callID: String) {
        let started = clock.now
        let id = state.withLock { state -> Int in
            state.nextDeadline += 1
            state.deadlines[callID] = state.nextDeadline
            return state.nextDeadline
        }
        checkAnswerDeadline(callID, id, started: started)
    }

    private func checkAnswerDeadline(_ callID: String, _ id: Int, started: Date) {
        guard let quality else { return }
        let waited = clock.now.timeIntervalSince(started), deadline = quality.answerDeadline
        let (current, waiting) = state.withLock { state -> (Bool, Bool) in
            let stage = state.ledger.entries[callID]?.stage
            let current = state.deadlines[callID] == id
            let waiting = current && (stage == .answering || stage == .ringing)
            if current, !waiting || waited >= deadline - 1e-6 { state.deadlines[callID] = nil }
            return (current, waiting)
        }
        guard current, waiting else { return }
        if waited >= deadline - 1e-6 {
            input { $0.timerFired(callID, .answerDeadline) }
            return
        }
        clock.schedule(after: .milliseconds(Int((min(deadline - waited, Self.deadlineRecheck) * 1000).rounded(.up)))) {
            [self] in
            checkAnswerDeadline(callID, id, started: started)
        }
    }

    func spawn(_ work: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.closed else { return }
            let id = state.nextTask
            state.nextTask += 1
            state.tasks[id] = Task { [self] in
                await work()
                _ = self.state.withLock { $0.tasks.removeValue(forKey: id) }
            }
        }
    }
}
