import Foundation
import SwitchboardKit

/// An in-memory CallKit with its contract enforced: errors where CallKit answers errors
/// (`callUUIDAlreadyExists`, `unknownCallUUID`, `maximumCallGroupsReached`, Do Not Disturb and
/// block-list filtering), violations where iOS would kill the app or leave stale UI, delegate
/// callbacks delivered asynchronously on one serial queue, and action timeouts on the given
/// clock.
public final class SimulatedCallSystem: CallSystem {
    public struct Configuration: Sendable {
        public var maximumCallGroups = 2
        /// An action not completed within this is timed out (`timedOutPerforming`).
        public var actionTimeout = 15.0
        public var doNotDisturb = false
        /// Handles the user blocked (Call Directory).
        public var blockedHandles: Set<String> = []
        /// How long after an answer or start is fulfilled the audio session is activated.
        public var audioActivationDelay = 0.0
        public init() {}
    }

    /// A call as the system shows it.
    public struct Call: Sendable, Equatable {
        public enum State: String, Sendable { case ringing, dialing, connecting, connected, ended }
        public let uuid: UUID
        public let outgoing: Bool
        public var update: CallUpdate
        public var state: State
        public var endReason: CallEndReason?
        public var muted = false
        /// Ended by the app (report or fulfilled end action), as opposed to by the system.
        var endedByApp = false
    }

    /// One line of the system's log, for timelines.
    public struct Record: Sendable, Equatable, CustomStringConvertible {
        public let at: Date
        public let text: String
        public var description: String { text }
    }

    private struct PendingAction {
        let action: CallSystemAction
        var completed: CallSystemAction.Completion?
        var timedOut = false
    }

    private struct State {
        var configuration: Configuration
        weak var delegate: (any CallSystemDelegate)?
        var calls: [UUID: Call] = [:]
        var order: [UUID] = []
        var actions: [UUID: PendingAction] = [:]
        var violations: [CallSystemViolation] = []
        var log: [Record] = []
        var audioSessionActive = false
        var queued = 0
        var pushes = 0
        /// The push whose handler is running, and whether it reported.
        var activePush: Int?
        var reportedPushes: Set<Int> = []
        var killed = false
    }

    public let device: SimulatedDevice
    let clock: any CallClock
    private let queue = DispatchQueue(label: "switchboard.simulated-callkit")
    private let state: LockedState<State>
    /// Called (on the pusher's thread) when iOS would kill the app.
    private let onKill: @Sendable () -> Void

    /// A provider of the app's current launch on `device`.
    public init(
        device: SimulatedDevice = SimulatedDevice(), clock: any CallClock,
        configuration: Configuration = Configuration(),
        onKill: @escaping @Sendable () -> Void = {}
    ) {
        self.device = device
        self.clock = clock
        self.onKill = onKill
        state = LockedState(State(configuration: configuration))
        let second = device.state.withLock { state -> Bool in
            if state.providerLaunch == state.launch { return true }
            state.providerLaunch = state.launch
            return false
        }
        if second { state.withLock { $0.violations.append(.secondProvider) } }
    }

    // MARK: What tests read

    public var violations: [CallSystemViolation] { state.withLock { $0.violations } }
    public var log: [Record] { state.withLock { $0.log } }
    public var calls: [Call] { state.withLock { state in state.order.compactMap { state.calls[$0] } } }
    public func call(_ uuid: UUID) -> Call? { state.withLock { $0.calls[uuid] } }
    /// Calls the system still shows (each is its own call group).
    public var liveCalls: [Call] { calls.filter { $0.state != .ended } }
    public var audioSessionActive: Bool { state.withLock { $0.audioSessionActive } }
    /// Callbacks queued and not yet delivered.
    public var pendingCallbacks: Int { state.withLock { $0.queued } }
    /// True once this launch was killed.
    public var killed: Bool { state.withLock { $0.killed } }

    public func configure(_ change: (inout Configuration) -> Void) { state.withLock { change(&$0.configuration) } }

    /// The contract was broken (or, when asked, calls were left showing).
    public struct ContractError: Error, Equatable, CustomStringConvertible {
        public let violations: [CallSystemViolation]
        /// Calls still showing when none should be (zombies block the next call: error 7).
        public let callsLeft: [UUID]

        public init(violations: [CallSystemViolation], callsLeft: [UUID]) {
            self.violations = violations
            self.callsLeft = callsLeft
        }

        public var description: String {
            (violations.map(\.description) + callsLeft.map { "call \($0) still shows" }).joined(separator: "; ")
        }
    }

    /// Throws when any rule was broken, and with `expectingNoCalls` when calls still show: one
    /// line for a test in XCTest (`XCTAssertNoThrow(try system.checkContract())`) or Swift
    /// Testing (`#expect(throws: Never.self) { try system.checkContract() }`).
    public func checkContract(expectingNoCalls: Bool = false) throws(ContractError) {
        let violations = self.violations
        let left = expectingNoCalls ? liveCalls.map(\.uuid) : []
        if !violations.isEmpty || !left.isEmpty { throw ContractError(violations: violations, callsLeft: left) }
    }

    /// Waits until every queued delegate callback was delivered.
    public func drain() async {
        while pendingCallbacks > 0 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async { continuation.resume() }
            }
        }
    }

    // MARK: PushKit

    /// Delivers a VoIP push to `handler` as PushKit would. Returns false when iOS no longer
    /// delivers pushes to this app. The handler must report a call before it returns and
    /// before it calls the completion, unless `mustReport` is false.
    @discardableResult
    public func deliverVoIPPush(
        _ payload: [String: Any], mustReport: Bool = true, to handler: any VoIPPushHandling
    ) -> Bool {
        guard !device.pushesStopped, !killed else { return false }
        let push = state.withLock { state -> Int in
            state.pushes += 1
            state.activePush = state.pushes
            return state.pushes
        }
        let completed = LockedState(false)
        handler.handleVoIPPush(payload, mustReport: mustReport) { [self] in
            guard
                completed.withLock({ done in
                    defer { done = true }
                    return !done
                })
            else { return }
            let reported = state.withLock { $0.reportedPushes.contains(push) }
            if mustReport, !reported { kill(.pushCompletedBeforeReport(push: push)) }
        }
        let reported = state.withLock { state -> Bool in
            state.activePush = nil
            return state.reportedPushes.contains(push)
        }
        if mustReport, !reported, !killed { kill(.pushNotReportedSynchronously(push: push)) }
        return true
    }

    /// Delivers the VoIP push the server sends for `payload` (its JSON, as PushKit hands it
    /// over), so a test need not spell the dictionary out.
    @discardableResult
    public func deliverVoIPPush(
        _ payload: VoIPPayload, mustReport: Bool = true, to handler: any VoIPPushHandling
    ) -> Bool {
        let json = (try? payload.json()).flatMap { try? JSONSerialization.jsonObject(with: $0) }
        return deliverVoIPPush(json as? [String: Any] ?? [:], mustReport: mustReport, to: handler)
    }

    private func kill(_ violation: CallSystemViolation) {
        let first = state.withLock { state -> Bool in
            state.violations.append(violation)
            defer { state.killed = true }
            return !state.killed
        }
        guard first else { return }
        device.state.withLock { $0.offences += 1 }
        record("app killed: \(violation)")
        onKill()
    }

    // MARK: AVAudioSession

    /// What an app does when it calls `AVAudioSession.setActive(true)` itself: flagged.
    public func appActivatesAudioSession() {
        state.withLock { $0.violations.append(.audioSessionActivatedByApp) }
    }

    // MARK: The user at the system UI

    /// The user answers from the system UI (lock screen).
    public func userAnswers(_ uuid: UUID) throws(CallSystemError) {
        try userAction(CallActionRequest(callUUID: uuid, kind: .answer))
    }
    /// The user declines or hangs up from the system UI.
    public func userEnds(_ uuid: UUID) throws(CallSystemError) {
        try userAction(CallActionRequest(callUUID: uuid, kind: .end))
    }
    public func userMutes(_ uuid: UUID, _ muted: Bool) throws(CallSystemError) {
        try userAction(CallActionRequest(callUUID: uuid, kind: .setMuted(muted)))
    }

    /// Sends an end action for a call the app may not know (a relaunch after a crash).
    public func systemEnds(_ uuid: UUID) { enqueuePerform(CallActionRequest(callUUID: uuid, kind: .end)) }

    /// `providerDidReset`: every call is gone.
    public func reset() {
        state.withLock { state in
            for uuid in state.order where state.calls[uuid]?.state != .ended {
                state.calls[uuid]?.state = .ended
            }
            state.audioSessionActive = false
        }
        record("reset")
        enqueue { $0.callSystemDidReset() }
    }

    private func userAction(_ request: CallActionRequest) throws(CallSystemError) {
        if let error = validate(request) { throw error }
        enqueuePerform(request)
    }

    // MARK: CallSystem

    public func setDelegate(_ delegate: any CallSystemDelegate) {
        state.withLock { $0.delegate = delegate }
    }

    public func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (CallSystemError?) -> Void
    ) {
        let error = state.withLock { state -> CallSystemError? in
            if let push = state.activePush { state.reportedPushes.insert(push) }
            if let call = state.calls[uuid], call.state != .ended { return .incomingCall(.callUUIDAlreadyExists) }
            if state.configuration.doNotDisturb { return .incomingCall(.filteredByDoNotDisturb) }
            if state.configuration.blockedHandles.contains(update.handle) { return .incomingCall(.filteredByBlockList) }
            state.calls[uuid] = Call(uuid: uuid, outgoing: false, update: update, state: .ringing)
            state.order.removeAll { $0 == uuid }
            state.order.append(uuid)
            return nil
        }
        record(
            "report incoming \(short(uuid)) \(update.callerName ?? update.handle)"
                + (error.map { " refused: \($0)" } ?? ""))
        enqueueCompletion { completion(error) }
    }

    public func reportCallUpdated(uuid: UUID, update: CallUpdate) {
        state.withLock { $0.calls[uuid]?.update = update }
    }

    public func reportOutgoingCallStartedConnecting(uuid: UUID, at date: Date?) {
        changeOutgoing(uuid, to: .connecting)
    }

    public func reportOutgoingCallConnected(uuid: UUID, at date: Date?) {
        changeOutgoing(uuid, to: .connected)
    }

    public func reportCallEnded(uuid: UUID, at date: Date?, reason: CallEndReason) {
        let deactivate = state.withLock { state -> Bool in
            guard let call = state.calls[uuid] else {
                state.violations.append(.unknownCall(uuid))
                return false
            }
            if call.state == .ended {
                if call.endedByApp { state.violations.append(.endedTwice(uuid)) }
                state.calls[uuid]?.endedByApp = true
                return false
            }
            state.calls[uuid]?.state = .ended
            state.calls[uuid]?.endReason = reason
            state.calls[uuid]?.endedByApp = true
            return deactivateIfIdle(&state)
        }
        record("ended \(short(uuid)) \(reason)")
        if deactivate { enqueue { $0.callSystemDidDeactivateAudioSession() } }
    }

    public func requestTransaction(
        _ request: CallActionRequest, completion: @escaping @Sendable (CallSystemError?) -> Void
    ) {
        let error = validate(request)
        if error == nil, case .start(let handle, let hasVideo) = request.kind {
            state.withLock { state in
                state.calls[request.callUUID] = Call(
                    uuid: request.callUUID, outgoing: true, update: CallUpdate(handle: handle, hasVideo: hasVideo),
                    state: .dialing)
                state.order.removeAll { $0 == request.callUUID }
                state.order.append(request.callUUID)
            }
        }
        record("request \(request.kind) \(short(request.callUUID))" + (error.map { " refused: \($0)" } ?? ""))
        enqueueCompletion { completion(error) }
        if error == nil { enqueuePerform(request) }
    }

    // MARK: Rules

    private func validate(_ request: CallActionRequest) -> CallSystemError? {
        state.withLock { state in
            let live = state.calls[request.callUUID].map { $0.state != .ended } ?? false
            switch request.kind {
            case .start:
                if live { return .transaction(.callUUIDAlreadyExists) }
                let groups = state.calls.values.filter { $0.state != .ended }.count
                if groups >= state.configuration.maximumCallGroups { return .transaction(.maximumCallGroupsReached) }
                return nil
            case .answer:
                guard let call = state.calls[request.callUUID], live else { return .transaction(.unknownCallUUID) }
                return call.outgoing || call.state != .ringing ? .transaction(.invalidAction) : nil
            case .end, .setMuted, .setHeld:
                return live ? nil : .transaction(.unknownCallUUID)
            }
        }
    }

    private func changeOutgoing(_ uuid: UUID, to newState: Call.State) {
        let known = state.withLock { state -> Bool in
            guard let call = state.calls[uuid], call.outgoing else {
                state.violations.append(.unknownCall(uuid))
                return false
            }
            if call.state != .ended { state.calls[uuid]?.state = newState }
            return true
        }
        if known { record("outgoing \(short(uuid)) \(newState.rawValue)") }
    }

    private func enqueuePerform(_ request: CallActionRequest) {
        let id = UUID()
        let real = CallSystemAction(callUUID: request.callUUID, kind: request.kind, id: id) { [weak self] completion in
            self?.completed(id, completion)
        }
        state.withLock { $0.actions[id] = PendingAction(action: real) }
        enqueue { delegate in delegate.callSystem(perform: real) }
        clock.schedule(after: .seconds(state.withLock { $0.configuration.actionTimeout })) { [weak self] in
            self?.timeOut(id)
        }
    }

    private func completed(_ id: UUID, _ completion: CallSystemAction.Completion) {
        enum Follow { case none, activate, deactivate }
        let (follow, text) = state.withLock { state -> (Follow, String?) in
            guard var pending = state.actions[id] else { return (.none, nil) }
            let action = pending.action
            if pending.completed != nil {
                state.violations.append(.actionCompletedTwice(action.kind, action.callUUID))
                return (.none, nil)
            }
            if pending.timedOut {
                state.violations.append(.actionCompletedAfterTimeout(action.kind, action.callUUID))
                return (.none, nil)
            }
            pending.completed = completion
            state.actions[id] = pending
            let uuid = action.callUUID
            let text = "\(action.kind) \(short(uuid)) \(completion)"
            switch (action.kind, completion) {
            case (.end, .failed):
                state.violations.append(.endActionFailed(uuid))
                return (.none, text)
            case (.end, .fulfilled):
                guard state.calls[uuid] != nil, state.calls[uuid]?.state != .ended else { return (.none, text) }
                state.calls[uuid]?.state = .ended
                state.calls[uuid]?.endedByApp = true
                return (deactivateIfIdle(&state) ? .deactivate : .none, text)
            case (.answer, .fulfilled):
                guard state.calls[uuid]?.state == .ringing else { return (.none, text) }
                state.calls[uuid]?.state = .connected
                return (activate(&state), text)
            case (.start, .fulfilled):
                guard let call = state.calls[uuid], call.state != .ended else { return (.none, text) }
                return (activate(&state), text)
            case (.answer, .failed), (.start, .failed):
                guard state.calls[uuid]?.state != .ended else { return (.none, text) }
                state.calls[uuid]?.state = .ended
                state.calls[uuid]?.endReason = .failed
                return (deactivateIfIdle(&state) ? .deactivate : .none, text)
            case (.setMuted(let muted), .fulfilled):
                state.calls[uuid]?.muted = muted
                return (.none, text)
            default:
                return (.none, text)
            }

            func activate(_ state: inout State) -> Follow {
                state.audioSessionActive ? .none : .activate
            }
        }
        if let text { record(text) }
        switch follow {
        case .none: break
        case .activate:
            let delay = state.withLock { $0.configuration.audioActivationDelay }
            if delay > 0 {
                clock.schedule(after: .seconds(delay)) { [weak self] in self?.activateAudioSession() }
            } else {
                activateAudioSession()
            }
        case .deactivate:
            record("audio session deactivated")
            enqueue { $0.callSystemDidDeactivateAudioSession() }
        }
    }

    private func activateAudioSession() {
        let activate = state.withLock { state -> Bool in
            guard !state.audioSessionActive, state.calls.values.contains(where: { $0.state != .ended }) else {
                return false
            }
            state.audioSessionActive = true
            return true
        }
        guard activate else { return }
        record("audio session activated")
        enqueue { $0.callSystemDidActivateAudioSession() }
    }

    private func timeOut(_ id: UUID) {
        let (action, deactivate) = state.withLock { state -> (CallSystemAction?, Bool) in
            guard var pending = state.actions[id], pending.completed == nil, !pending.timedOut else {
                return (nil, false)
            }
            pending.timedOut = true
            state.actions[id] = pending
            let uuid = pending.action.callUUID
            var deactivate = false
            switch pending.action.kind {
            case .answer, .start:
                if state.calls[uuid]?.state != .ended {
                    state.calls[uuid]?.state = .ended
                    state.calls[uuid]?.endReason = .failed
                    deactivate = deactivateIfIdle(&state)
                }
            default: break
            }
            return (pending.action, deactivate)
        }
        guard let action else { return }
        record("timed out \(action.kind) \(short(action.callUUID))")
        enqueue { $0.callSystem(timedOutPerforming: action) }
        if deactivate {
            record("audio session deactivated")
            enqueue { $0.callSystemDidDeactivateAudioSession() }
        }
    }

    /// True when no call is left and the session should be deactivated.
    private func deactivateIfIdle(_ state: inout State) -> Bool {
        guard state.audioSessionActive, !state.calls.values.contains(where: { $0.state != .ended }) else {
            return false
        }
        state.audioSessionActive = false
        return true
    }

    // MARK: Delivery

    private func enqueue(_ callback: @escaping @Sendable (any CallSystemDelegate) -> Void) {
        state.withLock { $0.queued += 1 }
        queue.async { [self] in
            let delegate = state.withLock { $0.delegate }
            if let delegate { callback(delegate) }
            state.withLock { $0.queued -= 1 }
        }
    }

    private func enqueueCompletion(_ completion: @escaping @Sendable () -> Void) {
        state.withLock { $0.queued += 1 }
        queue.async { [self] in
            completion()
            state.withLock { $0.queued -= 1 }
        }
    }

    private func record(_ text: String) {
        let now = clock.now
        state.withLock { $0.log.append(Record(at: now, text: text)) }
    }

    private func short(_ uuid: UUID) -> String { String(uuid.uuidString.prefix(8)).lowercased() }
}
