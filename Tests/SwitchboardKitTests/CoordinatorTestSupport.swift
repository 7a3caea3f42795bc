import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// A small in-memory model of the server's 1:1 call rules, from the point of view of one
/// device of user "me": enough for the coordinator's scenarios, with failures on demand.
final class InMemoryCallBackend: CallBackend {
    struct Failure: Sendable {
        let status: Int
        let code: String
        var times: Int
    }

    private struct State {
        var calls: [String: CallInfo] = [:]
        var events: [Event] = []
        var nextEvent: Int64 = 0
        var failures: [String: Failure] = [:]
        var requests: [String] = []
        var hold: Set<String> = []
        /// Meeting pre-authorisations the server would accept, by token: the call each is for.
        var preauthorizations: [String: String] = [:]
        /// Event reads waiting for the next event (resumed with `nil`: look again).
        var eventWaiters: [UUID: CheckedContinuation<EventsPage?, Never>] = [:]
    }

    let me: String
    private let state = Mutex(State())
    private let stamp = "2026-11-30T00:00:00.000Z"

    /// Round trips, when a test gives the backend some (as `SwitchboardClient` has).
    let networkQualityMonitor: NetworkQualityMonitor?

    init(me: String = "me", networkQuality: NetworkQualityMonitor? = nil) {
        self.me = me
        networkQualityMonitor = networkQuality
    }

    var requests: [String] { state.withLock { $0.requests } }
    func info(_ callID: String) -> CallInfo? { state.withLock { $0.calls[callID] } }

    /// The next `times` requests of this kind (`accept`, `mediaToken`, `create`…) fail.
    func fail(_ operation: String, status: Int = 503, code: String = "CALL_MEDIA_UNAVAILABLE", times: Int = 1) {
        state.withLock { $0.failures[operation] = Failure(status: status, code: code, times: times) }
    }

    /// A pre-authorisation the server accepts once, for a join of `callID`.
    func allowPreauthorization(_ token: String, forCall callID: String) {
        state.withLock { $0.preauthorizations[token] = callID }
    }

    /// Requests of this kind wait until `release` (a slow network).
    func hold(_ operation: String) { state.withLock { _ = $0.hold.insert(operation) } }
    func release(_ operation: String) { state.withLock { _ = $0.hold.remove(operation) } }

    /// Someone calls me: a ringing 1:1 call.
    @discardableResult
    func ring(from caller: String = "alice", id: String = UUID().uuidString.lowercased()) -> CallInfo {
        let call = CallInfo(
            id: id, scopeKind: .conversation, scopeId: "conv-\(caller)", mode: .audio, state: .ringing, endReason: nil,
            createdBy: caller, createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: me, state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: caller, joinedAt: stamp, leftAt: nil)])
        store(call)
        return call
    }

    /// Changes a call as the server would after someone else's request, and writes its event.
    @discardableResult
    func change(_ callID: String, _ body: (inout CallInfo) -> Void) -> Event {
        defer { wakeEventReaders() }
        return state.withLock { state in
            body(&state.calls[callID]!)
            return Self.event(callID, &state)
        }
    }

    /// The push payload the server would send for a call.
    func push(for call: CallInfo) -> [String: Any] {
        [
            "aps": [String: Any](), "callId": call.id, "scopeKind": call.scopeKind.rawValue, "scopeId": call.scopeId,
            "mode": call.mode.rawValue, "callerName": call.createdBy,
        ]
    }

    @discardableResult
    func endCall(_ callID: String, reason: CallInfo.EndReason) -> Event {
        change(callID) { call in
            call.state = .ended
            call.endReason = reason
            call.endedAt = stamp
            for index in call.invitations.indices where call.invitations[index].state == .ringing {
                call.invitations[index].state = reason == .missed ? .missed : .cancelled
            }
            for index in call.participants.indices where call.participants[index].leftAt == nil {
                call.participants[index].leftAt = stamp
            }
        }
    }

    // MARK: CallBackend

    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo {
        try await gate("create")
        let call = CallInfo(
            id: UUID().uuidString.lowercased(), scopeKind: scopeKind, scopeId: scopeID, mode: mode, state: .ringing,
            endReason: nil,
            createdBy: me, createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "bob", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: me, joinedAt: stamp, leftAt: nil)])
        store(call)
        return call
    }

    func call(_ callID: String) async throws -> CallInfo {
        try await gate("fetch")
        guard let call = info(callID) else {
            throw SwitchboardAPIError(status: 404, code: .notFound, message: "no such call", field: nil)
        }
        return call
    }

    func activeCalls() async throws -> [CallInfo] {
        try await gate("active")
        let me = self.me
        return state.withLock { state in
            state.calls.values.filter { call in
                call.state == .active && call.participants.contains { $0.userId == me && $0.leftAt == nil }
                    || call.state == .ringing && call.invitations.contains { $0.userId == me && $0.state == .ringing }
            }.sorted { $0.id < $1.id }
        }
    }

    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo {
        try await gate(action.rawValue)
        defer { wakeEventReaders() }
        let me = self.me, stamp = self.stamp
        return try state.withLock { state throws(SwitchboardAPIError) -> CallInfo in
            guard var call = state.calls[callID] else {
                throw SwitchboardAPIError(status: 404, code: .notFound, message: "", field: nil)
            }
            let conflict = SwitchboardAPIError(status: 409, code: .callNotRinging, message: "", field: nil)
            let mine = call.invitations.firstIndex { $0.userId == me }
            switch action {
            case .accept:
                guard call.state != .ended, let mine, call.invitations[mine].state == .ringing else { throw conflict }
                call.invitations[mine].state = .accepted
                call.state = .active
                call.answeredAt = stamp
                call.participants.append(CallParticipantInfo(userId: me, joinedAt: stamp, leftAt: nil))
            case .decline:
                guard call.state == .ringing, let mine, call.invitations[mine].state == .ringing else { throw conflict }
                call.invitations[mine].state = .declined
                call.state = .ended
                call.endReason = .declined
            case .cancel:
                guard call.state == .ringing, call.createdBy == me else { throw conflict }
                call.state = .ended
                call.endReason = .cancelled
                for index in call.invitations.indices { call.invitations[index].state = .cancelled }
            case .join:
                guard call.state == .active, call.scopeKind == .group,
                    !call.participants.contains(where: { $0.userId == me && $0.leftAt == nil })
                else { throw conflict }
                call.participants.append(CallParticipantInfo(userId: me, joinedAt: stamp, leftAt: nil))
            case .leave:
                guard call.state == .active else { throw conflict }
                call.state = .ended
                call.endReason = .completed
                for index in call.participants.indices where call.participants[index].leftAt == nil {
                    call.participants[index].leftAt = stamp
                }
            }
            state.calls[callID] = call
            _ = Self.event(callID, &state)
            return call
        }
    }

    /// A join with a pre-authorisation: logged as `join` after `preauthorized` or `preauthorizationRefused`;
    /// the media token comes with the answer when the server accepts the pre-authorisation
    /// (for this call, not used before), which uses it up.
    func join(_ callID: String, preauthorization: String) async throws -> CallWithMedia {
        let accepted = state.withLock { state -> Bool in
            let accepted = state.preauthorizations[preauthorization] == callID
            state.requests.append(accepted ? "preauthorized" : "preauthorizationRefused")
            return accepted
        }
        let call = try await perform(.join, onCall: callID)
        guard accepted else { return CallWithMedia(call: call, media: nil) }
        state.withLock { _ = $0.preauthorizations.removeValue(forKey: preauthorization) }
        return CallWithMedia(
            call: call, media: MediaToken(url: "wss://media.test", token: "joined-\(callID)", expiresAt: stamp))
    }

    func mediaToken(forCall callID: String) async throws -> MediaToken {
        try await gate("mediaToken")
        guard let call = info(callID), call.state == .active else {
            throw SwitchboardAPIError(status: 403, code: .notParticipant, message: "", field: nil)
        }
        return MediaToken(url: "wss://media.test", token: "token-\(callID)", expiresAt: stamp)
    }

    func eventCursor() async throws -> Int64 { state.withLock { $0.nextEvent } }

    /// Answers at once when there are events after `after`; otherwise waits (without polling:
    /// a watcher left running by a test that ends mid-call must not burn the CPU the tests
    /// beside it need) until one is written or the task is cancelled. `wait` is ignored: the
    /// scenarios run on a manual clock and a read simply waits for the next event.
    func events(after: Int64, wait: Int) async throws -> EventsPage {
        while true {
            try Task.checkCancellation()
            let id = UUID()
            let page = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<EventsPage?, Never>) in
                    let ready = state.withLock { state -> EventsPage?? in
                        let fresh = state.events.filter { $0.id > after }
                        if !fresh.isEmpty { return .some(EventsPage(events: fresh, cursor: fresh.last!.id)) }
                        // The cancellation flag is set before `onCancel` runs, so a read cancelled
                        // before it registers never registers.
                        if Task.isCancelled { return .some(nil) }
                        state.eventWaiters[id] = continuation
                        return .none
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                state.withLock { $0.eventWaiters.removeValue(forKey: id) }?.resume(returning: nil)
            }
            if let page { return page }
        }
    }

    // MARK: Helpers

    private func gate(_ operation: String) async throws {
        state.withLock { $0.requests.append(operation) }
        while state.withLock({ $0.hold.contains(operation) }) { try await Task.sleep(nanoseconds: 1_000_000) }
        let failure = state.withLock { state -> Failure? in
            guard var failure = state.failures[operation] else { return nil }
            failure.times -= 1
            state.failures[operation] = failure.times > 0 ? failure : nil
            return failure
        }
        if let failure {
            throw SwitchboardAPIError(
                status: failure.status, code: ErrorCode(rawValue: failure.code), message: "injected", field: nil)
        }
    }

    private func store(_ call: CallInfo) {
        state.withLock { state in
            state.calls[call.id] = call
            _ = Self.event(call.id, &state)
        }
        wakeEventReaders()
    }

    /// Lets every waiting event read look again (outside the lock).
    private func wakeEventReaders() {
        let waiters = state.withLock { state -> [CheckedContinuation<EventsPage?, Never>] in
            defer { state.eventWaiters = [:] }
            return Array(state.eventWaiters.values)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    private static func event(_ callID: String, _ state: inout State) -> Event {
        state.nextEvent += 1
        let event = Event(
            id: state.nextEvent, kind: EventKind.callChanged, callId: callID, createdAt: "2026-11-30T00:00:00.000Z")
        state.events.append(event)
        return event
    }
}

/// What a scenario drives: our coordinator or a naive one.
protocol CoordinatorUnderTest: CallSystemDelegate, VoIPPushHandling {
    func handle(events: [Event]) async
    func startCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, handle: String, clientID: UUID
    ) async throws -> String
}

extension CallCoordinator: CoordinatorUnderTest {}

enum Implementation: String, CaseIterable, Sendable, CustomStringConvertible {
    case ours, naive
    var description: String { rawValue }
}

/// One device: a coordinator (ours or naive) over a simulated call system, simulated media and
/// the in-memory backend, on a manual clock.
final class ScenarioRig: Sendable {
    let clock = ManualClock()
    let backend: InMemoryCallBackend
    let system: SimulatedCallSystem
    let media: SimulatedMedia
    let coordinator: any CoordinatorUnderTest
    let device = SimulatedDevice()
    let notices = NoticeLog()

    init(
        _ implementation: Implementation, backend: InMemoryCallBackend = InMemoryCallBackend(),
        naiveAudio: NaiveCoordinator.AudioStrategy = .startOnJoin,
        preauthorizations: (any CallPreauthorizationSource)? = nil,
        configure: (inout SimulatedCallSystem.Configuration) -> Void = { _ in }
    ) {
        self.backend = backend
        var configuration = SimulatedCallSystem.Configuration()
        configure(&configuration)
        system = SimulatedCallSystem(device: device, clock: clock, configuration: configuration)
        media = SimulatedMedia(clock: clock)
        media.attach(system)
        let media = self.media
        let notices = self.notices
        switch implementation {
        case .ours:
            coordinator = CallCoordinator(
                userID: backend.me, backend: backend, callSystem: system, media: { media.makeSession($0) },
                clock: clock,
                preauthorizations: preauthorizations, onNotice: { notice in notices.append(notice) })
        case .naive:
            coordinator = NaiveCoordinator(
                backend: backend, callSystem: system, media: { media.makeSession($0) }, audio: naiveAudio)
        }
    }

    /// Lets callbacks and requests run until nothing moves (they are all in memory).
    func settle() async { await system.settle() }

    /// Runs time forward in small steps, settling between them.
    func run(seconds: Double, step: Double = 0.1) async {
        await clock.run(seconds: seconds, step: step, settling: system)
    }

    /// A push as PushKit delivers it.
    @discardableResult
    func push(_ call: CallInfo) -> Bool { system.deliverVoIPPush(backend.push(for: call), to: coordinator) }

    /// The event stream (foreground app) delivers these.
    func events(_ events: Event...) async {
        await coordinator.handle(events: events)
        await settle()
    }

    func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }
}

/// The coordinator's notices, in order.
final class NoticeLog: Sendable {
    private let entries = Mutex<[CallLedger.Notice]>([])
    func append(_ notice: CallLedger.Notice) { entries.withLock { $0.append(notice) } }
    var all: [CallLedger.Notice] { entries.withLock { $0 } }
}
