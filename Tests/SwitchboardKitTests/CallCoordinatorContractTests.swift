import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// Our `CallCoordinator` against the simulated CallKit (SPEC §4 rules 1–7): the paths the
/// bug-class scenarios do not cover: refusals, deadlines, odd pushes, reset, and an ending
/// that races the report.
@Suite("CallCoordinator keeps the call system's contract", .timeLimit(.minutes(3)))
struct CallCoordinatorContractTests {
    // MARK: Pushes (rule 1)

    @Test func aDuplicatePushForARingingCallIsReportedAndStillShowsOneCall() async {
        let rig = ContractRig()
        let call = rig.backend.ring()
        #expect(rig.push(call))
        await rig.run(seconds: 0.5)
        #expect(rig.push(call))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.device.offences == 0)
        #expect(rig.reports(of: call) == 2, "the duplicate was reported too")
        #expect(rig.system.liveCalls.map(\.uuid) == [rig.uuid(call)])
        #expect(rig.system.call(rig.uuid(call))?.state == .ringing)
    }

    @Test func mustReportFalseForAKnownCallIsSkipped() async {
        let rig = ContractRig()
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        #expect(rig.push(call, mustReport: false))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.reports(of: call) == 1)
        #expect(rig.system.liveCalls.map(\.uuid) == [rig.uuid(call)])
    }

    @Test func mustReportFalseForAnUnknownCallIsStillReported() async {
        let rig = ContractRig()
        let call = rig.backend.ring()
        #expect(rig.push(call, mustReport: false))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.system.liveCalls.map(\.uuid) == [rig.uuid(call)], "the call rings")
    }

    @Test func aMalformedPushIsReportedAsAPlaceholderAndEndedAtOnce() async {
        let rig = ContractRig()
        #expect(rig.system.deliverVoIPPush(["aps": [String: Any](), "scopeKind": "conversation"], to: rig.coordinator))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(!rig.system.killed)
        #expect(rig.system.calls.count == 1, "reported, so the app is not killed")
        #expect(rig.system.liveCalls.isEmpty, "and ended at once")
        #expect(rig.system.calls.first?.endReason == .failed)
        #expect(rig.endings(of: rig.system.calls.first?.uuid) == 1)
    }

    // MARK: Refusals (callkit-facts §0.4)

    @Test func doNotDisturbShowsNothingAndDeclinesOnTheServer() async {
        let rig = ContractRig { $0.doNotDisturb = true }
        let call = rig.backend.ring()
        #expect(rig.push(call))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(!rig.system.killed, "a refused report is still a report")
        #expect(rig.system.calls.isEmpty)
        #expect(rig.backend.requests.contains("decline"))
        #expect(rig.backend.info(call.id)?.state == .ended, "the caller is not left ringing")
        #expect(rig.backend.info(call.id)?.endReason == .declined)
        #expect(
            rig.notices.all.contains { notice in
                if case .ended(call.id, _, .filteredByDoNotDisturb) = notice { true } else { false }
            }, "\(rig.notices.all)")
        #expect(rig.coordinator.liveCallIDs.isEmpty)
    }

    // MARK: Deadlines (rules 5 and 6)

    @Test func anAnswerWithoutMediaWithinTheDeadlineFailsAndEndsOnce() async throws {
        let rig = ContractRig()
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        rig.backend.hold("mediaToken")
        defer { rig.backend.release("mediaToken") }
        try rig.system.userAnswers(rig.uuid(call))
        await rig.run(seconds: 9.0)
        #expect(rig.system.call(rig.uuid(call))?.state == .ringing, "still waiting for media before the deadline")
        await rig.run(seconds: 1.5)
        #expect(rig.system.log.map(\.text).contains("answer \(rig.short(call)) failed"), "\(rig.system.log)")
        #expect(rig.system.call(rig.uuid(call))?.state == .ended)
        #expect(rig.system.call(rig.uuid(call))?.endReason == .failed)
        #expect(rig.endings(of: rig.uuid(call)) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.requests.contains("leave"))
        #expect(rig.backend.info(call.id)?.state == .ended, "the caller is not left in a dead call")
        #expect(!rig.system.audioSessionActive)
    }

    @Test func anUnansweredDialEndsAfter45Seconds() async throws {
        let rig = ContractRig()
        let callID = try await rig.coordinator.startCall(
            scopeKind: .conversation, scopeID: "conv-bob", mode: .audio, handle: "bob")
        let uuid = CallIdentity.uuid(forCallID: callID)
        await rig.run(seconds: 44.5, step: 0.5)
        #expect(rig.system.call(uuid)?.state == .connecting, "still dialing at 44.5 s")
        #expect(!rig.backend.requests.contains("cancel"))
        await rig.run(seconds: 1.0)
        #expect(rig.system.call(uuid)?.state == .ended)
        #expect(rig.system.call(uuid)?.endReason == .unanswered)
        #expect(rig.endings(of: uuid) == 1)
        #expect(rig.backend.requests.filter { $0 == "cancel" }.count == 1)
        #expect(rig.backend.info(callID)?.endReason == .cancelled)
        #expect(rig.notices.all.contains(.ended(callID: callID, reason: .unanswered, refusal: nil)))
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(!rig.system.audioSessionActive)
    }

    // MARK: Endings (rule 4)

    enum EndButton: String, CaseIterable, CustomStringConvertible {
        case systemUI, appButton
        var description: String { rawValue }
    }

    @Test(arguments: EndButton.allCases)
    func theUserEndingARingingCallDeclinesIt(_ button: EndButton) async throws {
        let rig = ContractRig()
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        switch button {
        case .systemUI: try rig.system.userEnds(rig.uuid(call))
        case .appButton: rig.coordinator.end(call.id)
        }
        await rig.run(seconds: 0.5)
        #expect(rig.system.log.map(\.text).contains("end \(rig.short(call)) fulfilled"), "\(rig.system.log)")
        #expect(rig.system.liveCalls.isEmpty)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.requests.filter { $0 == "decline" }.count == 1)
        #expect(rig.backend.info(call.id)?.endReason == .declined)
    }

    @Test func anEndActionForACallThisProcessNeverSawIsFulfilled() async {
        let rig = ContractRig()
        let stranger = UUID()
        rig.system.systemEnds(stranger)
        await rig.run(seconds: 0.5)
        let short = String(stranger.uuidString.prefix(8)).lowercased()
        #expect(rig.system.log.map(\.text).contains("end \(short) fulfilled"), "\(rig.system.log)")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.requests.isEmpty)
    }

    @Test(arguments: [(CallInfo.EndReason.cancelled, CallEndReason.remoteEnded), (.missed, .unanswered)])
    func aRingingCallEndedOnTheServerEndsWithItsReason(
        _ serverReason: CallInfo.EndReason, _ expected: CallEndReason
    ) async {
        let rig = ContractRig()
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        await rig.events(rig.backend.endCall(call.id, reason: serverReason))
        await rig.run(seconds: 0.5)
        #expect(rig.system.liveCalls.isEmpty)
        #expect(rig.system.call(rig.uuid(call))?.endReason == expected)
        #expect(rig.endings(of: rig.uuid(call)) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(!rig.backend.requests.contains("decline"), "nothing to decline: it is over")
    }

    @Test func aResetDuringACallLeavesMediaStopsAudioAndLeavesTheServerCall() async throws {
        let rig = ContractRig()
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        try rig.system.userAnswers(rig.uuid(call))
        await rig.run(seconds: 1)
        let session = try #require(rig.media.session(call.id))
        try #require(session.status.audioFlowing, "the call is up before the reset")
        rig.system.reset()
        await rig.run(seconds: 0.5)
        #expect(session.status.left)
        #expect(!session.status.audioFlowing)
        #expect(rig.notices.all.contains(.audioStopped(callID: call.id)))
        #expect(rig.backend.requests.contains("leave"))
        #expect(rig.backend.info(call.id)?.state == .ended)
        #expect(rig.coordinator.liveCallIDs.isEmpty)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    // MARK: An ending that races the report (callkit-facts §2 C)

    @Test func aRemoteEndWhileTheReportIsPendingIsReportedAfterItOnce() async {
        let rig = ContractRig()
        rig.calls.holdReports()
        let call = rig.backend.ring()
        #expect(rig.push(call))
        await rig.settle()
        await rig.events(rig.backend.endCall(call.id, reason: .cancelled))
        #expect(rig.endings(of: rig.uuid(call)) == 0, "not ended before CallKit confirmed the report")
        #expect(rig.system.call(rig.uuid(call))?.state == .ringing)
        rig.calls.releaseReports()
        await rig.run(seconds: 0.5)
        #expect(rig.system.liveCalls.isEmpty)
        #expect(rig.system.call(rig.uuid(call))?.endReason == .remoteEnded)
        #expect(rig.endings(of: rig.uuid(call)) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(!rig.system.killed)
    }

    @Test
    func theUserEndingACallWhileItsReportIsPendingEndsItAfterTheReport() async {
        let rig = ContractRig()
        rig.calls.holdReports()
        let call = rig.backend.ring()
        #expect(rig.push(call))
        await rig.settle()
        rig.coordinator.end(call.id)  // the app's decline button, before CallKit confirmed
        await rig.settle()
        rig.calls.releaseReports()
        await rig.run(seconds: 0.5)
        #expect(rig.system.liveCalls.isEmpty, "no zombie call left ringing: \(rig.system.calls)")
        #expect(rig.endings(of: rig.uuid(call)) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.info(call.id)?.endReason == .declined)
    }
}

// MARK: - Rig

/// One device: our coordinator over the simulated call system (behind a gate that can hold
/// report completions, as a slow CallKit would), simulated media and the in-memory backend, on
/// a manual clock.
private final class ContractRig: Sendable {
    let clock = ManualClock()
    let backend = InMemoryCallBackend()
    let device = SimulatedDevice()
    let system: SimulatedCallSystem
    let calls: ReportGate
    let media: SimulatedMedia
    let coordinator: CallCoordinator
    let notices = NoticeLog()

    init(configure: (inout SimulatedCallSystem.Configuration) -> Void = { _ in }) {
        var configuration = SimulatedCallSystem.Configuration()
        configure(&configuration)
        system = SimulatedCallSystem(device: device, clock: clock, configuration: configuration)
        calls = ReportGate(system)
        media = SimulatedMedia(clock: clock)
        media.attach(system)
        let media = self.media, notices = self.notices
        coordinator = CallCoordinator(
            userID: backend.me, backend: backend, callSystem: calls, media: { media.makeSession($0) }, clock: clock,
            onNotice: { notices.append($0) })
    }

    deinit { coordinator.shutdown() }

    /// Lets callbacks and in-memory requests run until nothing moves.
    func settle() async { await system.settle() }

    /// Runs the clock forward in steps, settling between them.
    func run(seconds: Double, step: Double = 0.1) async {
        await clock.run(seconds: seconds, step: step, settling: system)
    }

    @discardableResult
    func push(_ call: CallInfo, mustReport: Bool = true) -> Bool {
        system.deliverVoIPPush(backend.push(for: call), mustReport: mustReport, to: coordinator)
    }

    func events(_ events: Event...) async {
        await coordinator.handle(events: events)
        await settle()
    }

    func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }
    func short(_ call: CallInfo) -> String { String(uuid(call).uuidString.prefix(8)).lowercased() }

    /// `reportNewIncomingCall` calls for this call (refused ones included).
    func reports(of call: CallInfo) -> Int {
        system.log.filter { $0.text.hasPrefix("report incoming \(short(call)) ") }.count
    }

    /// `reportCallEnded` calls for this UUID.
    func endings(of uuid: UUID?) -> Int {
        guard let uuid else { return 0 }
        let short = String(uuid.uuidString.prefix(8)).lowercased()
        return system.log.filter { $0.text.hasPrefix("ended \(short) ") }.count
    }
}

/// Passes everything to the simulated call system; while holding, the completions of
/// `reportNewIncomingCall` wait until released (the report itself happens at once, so the
/// push is reported in time).
private final class ReportGate: CallSystem {
    private struct State {
        var holding = false
        var held: [@Sendable () -> Void] = []
    }

    private let inner: SimulatedCallSystem
    private let state = Mutex(State())

    init(_ inner: SimulatedCallSystem) { self.inner = inner }

    func holdReports() { state.withLock { $0.holding = true } }

    func releaseReports() {
        let held = state.withLock { state in
            defer {
                state.holding = false
                state.held = []
            }
            return state.held
        }
        held.forEach { $0() }
    }

    func setDelegate(_ delegate: any CallSystemDelegate) { inner.setDelegate(delegate) }

    func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (CallSystemError?) -> Void
    ) {
        inner.reportNewIncomingCall(uuid: uuid, update: update) { [self] error in
            let now = state.withLock { state -> Bool in
                guard state.holding else { return true }
                state.held.append { completion(error) }
                return false
            }
            if now { completion(error) }
        }
    }

    func reportCallUpdated(uuid: UUID, update: CallUpdate) { inner.reportCallUpdated(uuid: uuid, update: update) }
    func reportOutgoingCallStartedConnecting(uuid: UUID, at date: Date?) {
        inner.reportOutgoingCallStartedConnecting(uuid: uuid, at: date)
    }
    func reportOutgoingCallConnected(uuid: UUID, at date: Date?) {
        inner.reportOutgoingCallConnected(uuid: uuid, at: date)
    }
    func reportCallEnded(uuid: UUID, at date: Date?, reason: CallEndReason) {
        inner.reportCallEnded(uuid: uuid, at: date, reason: reason)
    }

    func requestTransaction(_ request: CallActionRequest, completion: @escaping @Sendable (CallSystemError?) -> Void) {
        inner.requestTransaction(request, completion: completion)
    }
}
