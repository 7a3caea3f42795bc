import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire
import SwitchboardTesting

/// After races and failures the server and the call system still agree: a hang-up that loses
/// the race with the answer, an accept or a leave the server refused, a mute before media joined,
/// an end the call system refused; and the manual clock's sleep ends when it is cancelled.
@Suite("Coordinator: the server and the call system agree after races and failures", .timeLimit(.minutes(3)))
struct CoordinatorRaceAndFailureTests {
    private func ours(_ rig: ScenarioRig) -> CallCoordinator { rig.coordinator as! CallCoordinator }

    /// Waits (real time, bounded generously) until the in-memory backend has seen a request.
    private func waitForRequest(_ rig: ScenarioRig, _ name: String) async -> Bool {
        await eventually { rig.backend.requests.contains(name) }
    }

    @Test
    func aHangUpThatLosesTheRaceWithTheAnswerLeavesTheServerCall() async throws {
        let rig = ScenarioRig(.ours)
        let id = try await rig.coordinator.startCall(
            scopeKind: .conversation, scopeID: "conv-bob", mode: .audio, handle: "bob", clientID: UUID())
        await rig.run(seconds: 1)
        rig.backend.hold("cancel")
        ours(rig).end(id)  // the user hangs up while it rings
        await rig.settle()
        #expect(await waitForRequest(rig, "cancel"))
        // Bob's accept lands first on the server.
        let accepted = rig.backend.change(id) { call in
            call.state = .active
            call.invitations[0].state = .accepted
            call.participants.append(CallParticipantInfo(userId: "bob", joinedAt: call.createdAt, leftAt: nil))
        }
        rig.backend.release("cancel")  // → 409 CALL_NOT_RINGING
        await ours(rig).settle()
        await rig.events(accepted)
        await rig.run(seconds: 2)
        #expect(rig.system.liveCalls.isEmpty)
        let server = try #require(rig.backend.info(id))
        #expect(
            !CallLedger.isStillParticipant("me", in: server),
            "me still a participant: \(server.state) \(rig.backend.requests)")
    }

    @Test
    func aFailedAcceptEndsTheInvitationSoTheCallerStopsRinging() async throws {
        let rig = ScenarioRig(.ours)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 1)
        rig.backend.fail("accept", status: 503, code: "CALL_MEDIA_UNAVAILABLE")
        try rig.system.userAnswers(rig.uuid(call))
        await rig.run(seconds: 2)
        #expect(rig.system.liveCalls.isEmpty, "ended in the call system as failed")
        #expect(rig.backend.info(call.id)?.invitations.first?.state != .ringing, "\(rig.backend.requests)")
    }

    @Test
    func aLeaveTheServerRefusedIsRetriedUntilTheCallEnds() async throws {
        let rig = ScenarioRig(.ours)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 1)
        try rig.system.userAnswers(rig.uuid(call))
        await rig.run(seconds: 2)
        try #require(rig.backend.info(call.id)?.state == .active)
        rig.backend.fail("leave", status: 503, code: "CALL_MEDIA_UNAVAILABLE")
        try rig.system.userEnds(rig.uuid(call))
        await rig.run(seconds: 10)
        #expect(rig.backend.info(call.id)?.state == .ended, "\(rig.backend.requests)")
    }

    @Test
    func aMuteBeforeMediaJoinedMutesTheMicrophone() async throws {
        let rig = ScenarioRig(.ours)
        let id = try await rig.coordinator.startCall(
            scopeKind: .conversation, scopeID: "conv-bob", mode: .audio, handle: "bob", clientID: UUID())
        await rig.run(seconds: 1)
        try rig.system.userMutes(CallIdentity.uuid(forCallID: id), true)
        await rig.run(seconds: 0.5)
        #expect(rig.system.call(CallIdentity.uuid(forCallID: id))?.muted == true)
        await rig.events(
            rig.backend.change(id) { call in
                call.state = .active
                call.invitations[0].state = .accepted
                call.participants.append(CallParticipantInfo(userId: "bob", joinedAt: call.createdAt, leftAt: nil))
            })
        await rig.run(seconds: 2)
        let session = try #require(rig.media.session(id))
        try #require(session.status.audioFlowing)
        #expect(session.status.muted, "CallKit shows muted, the microphone is open")
    }

    @Test
    func anEndTheCallSystemRefusedStillReportsTheCallEnded() {
        var ledger = CallLedger(userID: "me")
        let push = IncomingCallPush(
            callID: "call-1", scopeKind: .conversation, scopeID: "conv-alice", mode: .audio, callerName: "alice")
        let uuid = CallIdentity.uuid(forCallID: "call-1")
        _ = ledger.pushReceived(push, mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(uuid, error: nil)
        let request = CallActionRequest(callUUID: uuid, kind: .end)
        #expect(ledger.endRequested("call-1") == [.requestTransaction(request)])
        let effects = ledger.transactionCompleted(request, error: .transaction(.unknown))
        #expect(
            effects.contains(.reportEnded(uuid, .failed)) || effects.contains(.reportEnded(uuid, .remoteEnded)),
            "\(effects)")
    }

    @Test
    func manualClockSleepHonoursCancellation() async throws {
        let clock = ManualClock()
        let done = Mutex(false)
        let task = Task {
            try? await clock.sleep(for: .seconds(60))
            done.withLock { $0 = true }
        }
        // Cancel while it sleeps (its timer is registered), then wait for it to end without the
        // clock moving: a sleep that ignored cancellation would stay suspended until the bound.
        #expect(await eventually { clock.pendingTimers == 1 })
        task.cancel()
        #expect(await eventually { done.withLock { $0 } }, "still suspended after cancel")
        #expect(clock.pendingTimers == 0, "the cancelled sleep left its timer behind")
        clock.advance(by: 60)
        try await value(of: task)
    }
}

extension CallLedger {
    static func isStillParticipant(_ userID: String, in call: CallInfo) -> Bool {
        call.participants.contains { $0.userId == userID && $0.leftAt == nil }
    }
}
