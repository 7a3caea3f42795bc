import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting

/// The simulated CallKit's contract (callkit-facts §0 and §4), one rule per test, driven
/// directly: no coordinator, only a recording delegate and scripted push handlers. If the
/// simulation stops enforcing a rule, every scenario that relies on it silently passes.
@Suite("Simulated call system: the CallKit contract it enforces", .timeLimit(.minutes(3)))
struct SimulatedCallSystemTests {
    // MARK: PushKit: report before the handler finishes (rule 1)

    @Test func aPushCompletedBeforeItsReportKillsTheAppAndCountsAnOffence() {
        let rig = CallSystemRig()
        let handler = ScriptedPushHandler { [system = rig.system] _, completion in
            completion()  // "fetch first": the completion runs, the report comes too late
            system.reportNewIncomingCall(uuid: UUID(), update: CallUpdate(handle: "alice")) { _ in }
        }
        #expect(rig.system.deliverVoIPPush(["callId": "c1"], to: handler))
        #expect(rig.system.violations == [.pushCompletedBeforeReport(push: 1)])
        #expect(rig.system.killed)
        #expect(rig.device.offences == 1)
        // A killed app gets no more pushes in this launch.
        #expect(!rig.system.deliverVoIPPush(["callId": "c2"], to: handler))
        #expect(handler.invocations == 1)
    }

    @Test func aHandlerThatReturnsWithoutReportingKillsTheApp() {
        let rig = CallSystemRig()
        let parked = Mutex<(@Sendable () -> Void)?>(nil)
        let handler = ScriptedPushHandler { _, completion in parked.withLock { $0 = completion } }
        #expect(rig.system.deliverVoIPPush(["callId": "c1"], to: handler))
        #expect(rig.system.violations == [.pushNotReportedSynchronously(push: 1)])
        #expect(rig.system.killed)
        #expect(rig.device.offences == 1)
    }

    @Test func aReportedPushWhoseCompletionRunsFromTheReportIsFine() async {
        let rig = CallSystemRig()
        let uuid = UUID()
        let completed = Mutex(false)
        let handler = ScriptedPushHandler { [system = rig.system] _, completion in
            system.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: "alice")) { _ in
                completed.withLock { $0 = true }
                completion()
            }
        }
        #expect(rig.system.deliverVoIPPush(["callId": "c1"], to: handler))
        await rig.system.drain()
        #expect(completed.withLock { $0 })
        #expect(rig.system.violations.isEmpty)
        #expect(!rig.system.killed)
        #expect(rig.system.liveCalls.map(\.uuid) == [uuid])
    }

    @Test func mustReportFalseMayBeSkippedWithoutAReport() {
        let rig = CallSystemRig()
        let handler = ScriptedPushHandler { _, completion in completion() }
        #expect(rig.system.deliverVoIPPush(["callId": "c1"], mustReport: false, to: handler))
        #expect(rig.system.violations.isEmpty)
        #expect(!rig.system.killed)
        #expect(rig.device.offences == 0)
        #expect(rig.system.calls.isEmpty)
    }

    @Test func threeOffencesStopPushesForGoodAcrossLaunches() {
        let device = SimulatedDevice()
        let clock = ManualClock()
        let handler = ScriptedPushHandler { _, _ in }  // never reports
        for offence in 1...3 {
            if offence > 1 { device.launch() }
            let system = SimulatedCallSystem(device: device, clock: clock)
            #expect(!device.pushesStopped, "delivered while under the limit (offence \(offence))")
            #expect(system.deliverVoIPPush(["callId": "c\(offence)"], to: handler))
            #expect(device.offences == offence)
        }
        #expect(device.pushesStopped)
        device.launch()
        let afterwards = SimulatedCallSystem(device: device, clock: clock)
        #expect(!afterwards.deliverVoIPPush(["callId": "c4"], to: handler))
        #expect(handler.invocations == 3, "the fourth push never reached the app")
        #expect(afterwards.violations.isEmpty)
    }

    // MARK: One provider per process

    @Test func aSecondProviderInOneLaunchIsFlaggedButANewLaunchMayCreateOne() {
        let device = SimulatedDevice()
        let clock = ManualClock()
        let first = SimulatedCallSystem(device: device, clock: clock)
        let second = SimulatedCallSystem(device: device, clock: clock)
        #expect(first.violations.isEmpty)
        #expect(second.violations == [.secondProvider])
        device.launch()
        let relaunched = SimulatedCallSystem(device: device, clock: clock)
        #expect(relaunched.violations.isEmpty)
    }

    // MARK: reportNewIncomingCall refusals

    @Test func aDuplicateUUIDIsRefusedButStillCountsAsTheReport() async {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.report(uuid) == nil)
        let errors = Recorder<CallSystemError?>()
        let handler = ScriptedPushHandler { [system = rig.system] _, completion in
            system.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: "alice")) { error in
                errors.append(error)
                completion()
            }
        }
        #expect(rig.system.deliverVoIPPush(["callId": "c1"], to: handler))
        await rig.system.drain()
        #expect(errors.all == [.incomingCall(.callUUIDAlreadyExists)])
        #expect(rig.system.violations.isEmpty, "a refused report is still a report")
        #expect(rig.system.liveCalls.count == 1)
    }

    @Test func doNotDisturbRefusesTheCallAndShowsNothing() async {
        let rig = CallSystemRig { $0.doNotDisturb = true }
        let uuid = UUID()
        #expect(await rig.report(uuid) == .incomingCall(.filteredByDoNotDisturb))
        #expect(rig.system.calls.isEmpty)
        rig.system.configure { $0.doNotDisturb = false }
        #expect(await rig.report(uuid) == nil)
        #expect(rig.system.liveCalls.map(\.uuid) == [uuid])
    }

    @Test func aBlockedHandleIsRefusedOthersRing() async {
        let rig = CallSystemRig { $0.blockedHandles = ["mallory"] }
        #expect(await rig.report(UUID(), handle: "mallory") == .incomingCall(.filteredByBlockList))
        #expect(rig.system.calls.isEmpty)
        #expect(await rig.report(UUID(), handle: "alice") == nil)
        #expect(rig.system.liveCalls.map(\.update.handle) == ["alice"])
    }

    // MARK: Transactions

    @Test(arguments: [CallActionKind.answer, .end, .setMuted(true)])
    func actionsForAnUnknownCallAreRefused(_ kind: CallActionKind) async {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.request(uuid, kind) == .transaction(.unknownCallUUID))
        #expect(throws: CallSystemError.transaction(.unknownCallUUID)) {
            switch kind {
            case .answer: try rig.system.userAnswers(uuid)
            case .end: try rig.system.userEnds(uuid)
            default: try rig.system.userMutes(uuid, true)
            }
        }
        await rig.system.drain()
        #expect(rig.delegate.events.isEmpty, "no action reaches the app")
    }

    @Test func aStartBeyondTheMaximumCallGroupsIsRefused() async {
        let rig = CallSystemRig { $0.maximumCallGroups = 2 }
        #expect(await rig.report(UUID()) == nil)
        #expect(await rig.request(UUID(), .start(handle: "bob", hasVideo: false)) == nil)
        let third = UUID()
        #expect(
            await rig.request(third, .start(handle: "carol", hasVideo: false))
                == .transaction(.maximumCallGroupsReached))
        #expect(rig.system.call(third) == nil)
        #expect(rig.system.liveCalls.count == 2)
    }

    @Test func anEndedCallFreesItsCallGroup() async {
        let rig = CallSystemRig { $0.maximumCallGroups = 1 }
        let first = UUID()
        #expect(await rig.report(first) == nil)
        #expect(
            await rig.request(UUID(), .start(handle: "bob", hasVideo: false)) == .transaction(.maximumCallGroupsReached)
        )
        rig.system.reportCallEnded(uuid: first, at: nil, reason: .remoteEnded)
        #expect(await rig.request(UUID(), .start(handle: "bob", hasVideo: false)) == nil)
    }

    @Test func startingALiveUUIDAgainIsRefused() async {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.request(uuid, .start(handle: "bob", hasVideo: false)) == nil)
        #expect(await rig.request(uuid, .start(handle: "bob", hasVideo: false)) == .transaction(.callUUIDAlreadyExists))
        await rig.system.drain()
        #expect(
            rig.delegate.events == [.perform(.start(handle: "bob", hasVideo: false), uuid)], "only one start action")
    }

    // MARK: Actions: completed exactly once, or timed out

    @Test func anActionCompletedTwiceIsFlagged() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        let answer = try await rig.userAnswers(uuid)
        answer.fulfill()
        answer.fulfill()
        #expect(rig.system.violations == [.actionCompletedTwice(.answer, uuid)])
    }

    @Test func anActionNeverCompletedTimesOutAfterTheActionTimeout() async throws {
        let rig = CallSystemRig { $0.actionTimeout = 15 }
        let uuid = UUID()
        let answer = try await rig.userAnswers(uuid)
        rig.clock.advance(by: 14.9)
        await rig.system.drain()
        #expect(rig.delegate.timedOut.isEmpty)
        #expect(rig.system.call(uuid)?.state == .ringing)
        rig.clock.advance(by: 0.2)
        await rig.system.drain()
        #expect(rig.delegate.timedOut.map(\.id) == [answer.id], "the same action is handed back")
        #expect(rig.system.call(uuid)?.state == .ended)
        #expect(rig.system.call(uuid)?.endReason == .failed)
        #expect(rig.system.violations.isEmpty)
        answer.fulfill()
        #expect(rig.system.violations == [.actionCompletedAfterTimeout(.answer, uuid)])
        #expect(!rig.system.audioSessionActive, "a late fulfil must not bring the call back")
    }

    @Test func aCompletedActionNeverTimesOut() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        let answer = try await rig.userAnswers(uuid)
        answer.fulfill()
        rig.clock.advance(by: 60)
        await rig.system.drain()
        #expect(rig.delegate.timedOut.isEmpty)
        #expect(rig.system.call(uuid)?.state == .connected)
        #expect(rig.system.violations.isEmpty)
    }

    // MARK: The audio session belongs to the call system

    @Test func theSessionActivatesOnlyAfterAnAnswerIsFulfilled() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        let answer = try await rig.userAnswers(uuid)
        #expect(rig.delegate.events == [.perform(.answer, uuid)])
        #expect(!rig.system.audioSessionActive, "not before the answer is fulfilled")
        answer.fulfill()
        await rig.system.drain()
        #expect(rig.delegate.events == [.perform(.answer, uuid), .activated])
        #expect(rig.system.audioSessionActive)
        #expect(rig.system.call(uuid)?.state == .connected)
    }

    @Test func theSessionActivatesOnlyAfterAStartIsFulfilled() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        let kind = CallActionKind.start(handle: "bob", hasVideo: false)
        #expect(await rig.request(uuid, kind) == nil)
        await rig.system.drain()
        #expect(rig.delegate.events == [.perform(kind, uuid)])
        #expect(!rig.system.audioSessionActive)
        try #require(rig.delegate.actions.first).fulfill()
        await rig.system.drain()
        #expect(rig.delegate.events == [.perform(kind, uuid), .activated])
    }

    @Test func aFailedAnswerEndsTheCallWithoutActivatingTheSession() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        let answer = try await rig.userAnswers(uuid)
        answer.fail()
        await rig.system.drain()
        #expect(!rig.delegate.events.contains(.activated))
        #expect(!rig.system.audioSessionActive)
        #expect(rig.system.call(uuid)?.state == .ended)
        #expect(rig.system.call(uuid)?.endReason == .failed)
    }

    @Test func theSessionDeactivatesWhenTheLastCallEnds() async throws {
        let rig = CallSystemRig()
        let first = UUID(), second = UUID()
        try await rig.userAnswers(first).fulfill()
        #expect(await rig.report(second) == nil)
        rig.system.reportCallEnded(uuid: first, at: nil, reason: .remoteEnded)
        await rig.system.drain()
        #expect(!rig.delegate.events.contains(.deactivated), "a call is still ringing")
        #expect(rig.system.audioSessionActive)
        rig.system.reportCallEnded(uuid: second, at: nil, reason: .remoteEnded)
        await rig.system.drain()
        #expect(rig.delegate.events.filter { $0 == .deactivated }.count == 1)
        #expect(!rig.system.audioSessionActive)
    }

    @Test
    func theSessionDeactivatesWhenTheLastCallEndsByATimeout() async throws {
        let rig = CallSystemRig { $0.actionTimeout = 15 }
        let first = UUID(), second = UUID()
        try await rig.userAnswers(first).fulfill()
        _ = try await rig.userAnswers(second)  // never completed
        rig.system.reportCallEnded(uuid: first, at: nil, reason: .remoteEnded)
        rig.clock.advance(by: 16)
        await rig.system.drain()
        #expect(rig.system.liveCalls.isEmpty)
        #expect(!rig.system.audioSessionActive)
        #expect(rig.delegate.events.contains(.deactivated))
    }

    @Test func theAppActivatingTheSessionItselfIsFlagged() {
        let rig = CallSystemRig()
        rig.system.appActivatesAudioSession()
        #expect(rig.system.violations == [.audioSessionActivatedByApp])
    }

    // MARK: Endings

    @Test func failingAnEndActionIsFlaggedAndLeavesTheCallUp() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.report(uuid) == nil)
        try rig.system.userEnds(uuid)
        await rig.system.drain()
        try #require(rig.delegate.actions.first).fail()
        #expect(rig.system.violations == [.endActionFailed(uuid)])
        #expect(rig.system.call(uuid)?.state == .ringing, "the stale call UI stays")
    }

    @Test func aFulfilledEndActionEndsTheCall() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.report(uuid) == nil)
        try rig.system.userEnds(uuid)
        await rig.system.drain()
        try #require(rig.delegate.actions.first).fulfill()
        #expect(rig.system.liveCalls.isEmpty)
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .remoteEnded)
        #expect(rig.system.violations == [.endedTwice(uuid)], "the end action already ended it")
    }

    @Test func reportingAnEndingTwiceIsFlagged() async {
        let rig = CallSystemRig()
        let uuid = UUID()
        #expect(await rig.report(uuid) == nil)
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .remoteEnded)
        #expect(rig.system.violations.isEmpty)
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .failed)
        #expect(rig.system.violations == [.endedTwice(uuid)])
        #expect(rig.system.call(uuid)?.endReason == .remoteEnded, "the first reason stands")
    }

    @Test func reportingTheEndOfACallNeverReportedIsFlagged() {
        let rig = CallSystemRig()
        let uuid = UUID()
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .remoteEnded)
        #expect(rig.system.violations == [.unknownCall(uuid)])
    }

    @Test func oneEndingAfterTheSystemEndedTheCallIsNotFlagged() async throws {
        let rig = CallSystemRig()
        let uuid = UUID()
        try await rig.userAnswers(uuid).fail()  // the system ends it as failed
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .failed)
        #expect(rig.system.violations.isEmpty)
        rig.system.reportCallEnded(uuid: uuid, at: nil, reason: .failed)
        #expect(rig.system.violations == [.endedTwice(uuid)])
    }

    // MARK: providerDidReset

    @Test func resetEndsEveryCallAndTellsTheDelegate() async throws {
        let rig = CallSystemRig()
        let answered = UUID(), dialed = UUID()
        try await rig.userAnswers(answered).fulfill()
        #expect(await rig.request(dialed, .start(handle: "bob", hasVideo: false)) == nil)
        await rig.system.drain()
        #expect(rig.system.liveCalls.count == 2)
        rig.system.reset()
        await rig.system.drain()
        #expect(rig.system.liveCalls.isEmpty)
        #expect(rig.delegate.events.last == .reset)
        #expect(!rig.system.audioSessionActive)
        #expect(await rig.request(answered, .end) == .transaction(.unknownCallUUID), "the calls are gone")
    }
}

// MARK: - Support

/// A simulated call system on a manual clock with a recording delegate.
private final class CallSystemRig: Sendable {
    let clock = ManualClock()
    let device = SimulatedDevice()
    let system: SimulatedCallSystem
    let delegate = RecordingCallSystemDelegate()

    init(configure: (inout SimulatedCallSystem.Configuration) -> Void = { _ in }) {
        var configuration = SimulatedCallSystem.Configuration()
        configure(&configuration)
        system = SimulatedCallSystem(device: device, clock: clock, configuration: configuration)
        system.setDelegate(delegate)
    }

    /// `reportNewIncomingCall`, waiting for its completion.
    func report(_ uuid: UUID, handle: String = "alice") async -> CallSystemError? {
        await withCheckedContinuation { continuation in
            system.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: handle)) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// `requestTransaction`, waiting for its completion.
    func request(_ uuid: UUID, _ kind: CallActionKind) async -> CallSystemError? {
        await withCheckedContinuation { continuation in
            system.requestTransaction(CallActionRequest(callUUID: uuid, kind: kind)) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// Reports an incoming call, has the user answer it and returns the answer action the app got.
    func userAnswers(_ uuid: UUID) async throws -> CallSystemAction {
        #expect(await report(uuid) == nil)
        try system.userAnswers(uuid)
        await system.drain()
        return try #require(delegate.actions.last { $0.callUUID == uuid && $0.kind == .answer })
    }
}

/// Records every delegate callback in order.
private final class RecordingCallSystemDelegate: CallSystemDelegate {
    enum Event: Equatable, Sendable {
        case perform(CallActionKind, UUID)
        case timedOut(CallActionKind, UUID)
        case activated, deactivated, reset
    }

    private struct State {
        var events: [Event] = []
        var actions: [CallSystemAction] = []
        var timedOut: [CallSystemAction] = []
    }

    private let state = Mutex(State())

    var events: [Event] { state.withLock { $0.events } }
    var actions: [CallSystemAction] { state.withLock { $0.actions } }
    var timedOut: [CallSystemAction] { state.withLock { $0.timedOut } }

    func callSystemDidReset() { state.withLock { $0.events.append(.reset) } }

    func callSystem(perform action: CallSystemAction) {
        state.withLock {
            $0.events.append(.perform(action.kind, action.callUUID))
            $0.actions.append(action)
        }
    }

    func callSystem(timedOutPerforming action: CallSystemAction) {
        state.withLock {
            $0.events.append(.timedOut(action.kind, action.callUUID))
            $0.timedOut.append(action)
        }
    }

    func callSystemDidActivateAudioSession() { state.withLock { $0.events.append(.activated) } }
    func callSystemDidDeactivateAudioSession() { state.withLock { $0.events.append(.deactivated) } }
}

/// A push handler whose behaviour each test scripts.
private final class ScriptedPushHandler: VoIPPushHandling {
    typealias Script = @Sendable (_ mustReport: Bool, _ completion: @escaping @Sendable () -> Void) -> Void
    private let script: Script
    private let count = Mutex(0)

    init(_ script: @escaping Script) { self.script = script }

    var invocations: Int { count.withLock { $0 } }

    func handleVoIPPush(_ payload: [AnyHashable: Any], mustReport: Bool, completion: @escaping @Sendable () -> Void) {
        count.withLock { $0 += 1 }
        script(mustReport, completion)
    }
}

/// Values collected from callbacks on any thread.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
