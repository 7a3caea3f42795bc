import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting

/// An app server's own signaling, in memory: one state per call, every action recorded.
final class AppSignaling: GatewayCallBackend {
    private struct State {
        var calls: [String: GatewayCallState] = [:]
        var actions: [String] = []
        var refuseAnswer = false
    }

    private let state = Mutex(State())

    func set(_ callID: String, _ call: GatewayCallState) { state.withLock { $0.calls[callID] = call } }
    func refuseAnswers() { state.withLock { $0.refuseAnswer = true } }
    func current(_ callID: String) -> GatewayCallState? { state.withLock { $0.calls[callID] } }
    var actions: [String] { state.withLock { $0.actions } }

    private func act(
        _ action: String, _ call: GatewayCall, to next: (GatewayCallState) -> GatewayCallState
    ) throws
        -> GatewayCallState
    {
        try state.withLock { state in
            state.actions.append("\(action):\(call.callID)")
            if action == "answer", state.refuseAnswer {
                throw SwitchboardAPIError(status: 409, code: ErrorCode(rawValue: "ALREADY_ENDED"), message: "gone")
            }
            let now = next(state.calls[call.callID] ?? .failed)
            state.calls[call.callID] = now
            return now
        }
    }

    func state(of call: GatewayCall) async throws -> GatewayCallState {
        state.withLock { $0.calls[call.callID] ?? .failed }
    }
    func answer(_ call: GatewayCall) async throws -> GatewayCallState {
        try act("answer", call) { $0 == .ringing ? .answered : $0 }
    }
    func decline(_ call: GatewayCall) async throws -> GatewayCallState {
        try act("decline", call) { $0 == .ringing ? .declined : $0 }
    }
    func hangUp(_ call: GatewayCall) async throws -> GatewayCallState {
        try act("hangUp", call) { $0 == .answered ? .ended : $0 == .ringing ? .cancelled : $0 }
    }
    func mediaToken(for call: GatewayCall) async throws -> MediaToken {
        state.withLock { $0.actions.append("mediaToken:\(call.callID)") }
        return MediaToken(url: "wss://media.acme.test/\(call.roomID)", token: "acme-token", expiresAt: "")
    }
}

/// Calls an app server rang through the push gateway (issue: they used to end as failed): the
/// coordinator answers, declines and hangs up over the app's own signaling, with every rule of
/// its own calls, and never asks Switchboard's call API about them.
@Suite("Gateway calls in the SDK", .timeLimit(.minutes(1)))
struct GatewayCallTests {
    final class Rig: Sendable {
        let clock = ManualClock()
        let system: SimulatedCallSystem
        let media: SimulatedMedia
        let signaling = AppSignaling()
        let coordinator: CallCoordinator
        let notices = NoticeLog()

        init(gateway: Bool = true) {
            system = SimulatedCallSystem(clock: clock)
            media = SimulatedMedia(clock: clock)
            media.attach(system)
            let media = self.media, notices = self.notices
            coordinator = CallCoordinator(
                userID: "bob", backend: GatewayOnlyBackend(), callSystem: system, media: { media.makeSession($0) },
                clock: clock, gateway: gateway ? signaling : nil, onNotice: { notices.append($0) })
        }

        deinit { coordinator.shutdown() }

        func run(_ seconds: Double) async {
            await clock.run(seconds: seconds, settling: system)
            await coordinator.settle()
        }

        /// The app server rings `callID` and its VoIP push arrives.
        func ring(_ callID: String, appServerSays state: GatewayCallState = .ringing) async -> UUID {
            signaling.set(callID, state)
            let push = VoIPPayload(
                callId: callID, scopeKind: .gateway, scopeId: "room-\(callID)", mode: .audio, callerName: "Alice",
                ext: ["ticket": "t-1"])
            #expect(system.deliverVoIPPush(push, to: coordinator))
            return CallIdentity.uuid(forCallID: callID)
        }
    }

    @Test func aGatewayRingIsAnsweredOverTheAppsSignalingAndHungUpCleanly() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-1")
        await rig.run(0.5)
        #expect(rig.system.call(uuid)?.state == .ringing)
        #expect(rig.system.call(uuid)?.update.callerName == "Alice")
        try rig.system.userAnswers(uuid)
        await rig.run(2)
        #expect(rig.system.call(uuid)?.state == .connected)
        #expect(rig.signaling.actions == ["answer:acme-1", "mediaToken:acme-1"])
        #expect(rig.media.session("acme-1")?.status.token == "acme-token")
        try rig.system.userEnds(uuid)
        await rig.run(1)
        #expect(rig.signaling.actions.last == "hangUp:acme-1")
        #expect(rig.signaling.current("acme-1") == .ended)
        #expect(rig.media.session("acme-1")?.status.left == true)
        try rig.system.checkContract(expectingNoCalls: true)
        let endings = rig.notices.all.compactMap { notice -> CallEndReason?? in
            if case .ended(_, let reason, _) = notice { reason } else { nil }
        }
        #expect(endings.count == 1 && endings.first == .some(nil), "ended here, not failed: \(endings)")
    }

    @Test func theAppServersCancelEndsTheRingWhenItsSignalingSaysSo() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-2")
        await rig.run(0.5)
        rig.signaling.set("acme-2", .cancelled)
        rig.coordinator.gatewayCallChanged("acme-2", to: .cancelled)
        await rig.run(0.5)
        #expect(rig.system.call(uuid)?.state == .ended)
        #expect(rig.system.call(uuid)?.endReason == .remoteEnded)
        #expect(rig.signaling.actions.isEmpty, "nothing to send: the caller withdrew it")
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test func aCancelTheAppsSignalingMissedIsFoundByTheRecheck() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-3")
        await rig.run(0.5)
        rig.signaling.set("acme-3", .cancelled)
        await rig.run(CallCoordinator.gatewayRecheckSeconds - 1)
        #expect(rig.system.call(uuid)?.state == .ringing, "not re-read yet")
        await rig.run(1.5)
        #expect(rig.system.call(uuid)?.state == .ended)
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test(arguments: [
        (GatewayCallState.answered, CallEndReason.answeredElsewhere),
        (.declined, .declinedElsewhere),
        (.missed, .unanswered),
        (.failed, .failed),
    ])
    func whatTheAppServerSaysEndsTheRingAsCallKitExpects(
        _ state: GatewayCallState, _ reason: CallEndReason
    )
        async throws
    {
        let rig = Rig()
        let uuid = await rig.ring("acme-4")
        await rig.run(0.5)
        rig.coordinator.gatewayCallChanged("acme-4", to: state)
        await rig.run(0.5)
        #expect(rig.system.call(uuid)?.endReason == reason)
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test func aDeclineIsSentToTheAppServer() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-5")
        await rig.run(0.5)
        try rig.system.userEnds(uuid)
        await rig.run(1)
        #expect(rig.signaling.actions == ["decline:acme-5"])
        #expect(rig.signaling.current("acme-5") == .declined)
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test func anAnswerTheAppServerRefusesEndsTheCallEverywhere() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-6")
        await rig.run(0.5)
        rig.signaling.refuseAnswers()
        try rig.system.userAnswers(uuid)
        await rig.run(2)
        #expect(rig.system.call(uuid)?.state == .ended)
        #expect(rig.media.session("acme-6")?.status.joined != true)
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test func aStalePushForACallAlreadyOverRingsOnlyUntilItIsRead() async throws {
        let rig = Rig()
        let uuid = await rig.ring("acme-8", appServerSays: .cancelled)
        await rig.run(0.5)
        #expect(rig.system.call(uuid)?.endReason == .remoteEnded)
        try rig.system.checkContract(expectingNoCalls: true)
    }

    @Test func withoutTheAppsSignalingAGatewayRingIsReportedThenEndedAsFailed() async throws {
        let rig = Rig(gateway: false)
        let uuid = await rig.ring("acme-7")
        await rig.run(1)
        #expect(rig.system.call(uuid)?.endReason == .failed, "\(rig.notices.all) \(rig.system.log)")
        try rig.system.checkContract(expectingNoCalls: true)
    }
}
