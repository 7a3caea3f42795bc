import Foundation
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// The classic bug classes of iOS calling apps (callkit-facts §2), each as a scenario on a
/// manual clock against the simulated call system. Every scenario runs twice: our coordinator
/// must get it right, and a naive coordinator that makes the classic mistake must get it
/// wrong — so each scenario is known to catch the bug it is named after.
@Suite("Bug-class scenarios: ours passes, a naive coordinator fails", .timeLimit(.minutes(3)))
struct BugClassScenarioTests {
    /// A: the push is reported synchronously, before the handler's completion.
    @Test(arguments: Implementation.allCases)
    func killedForNotReportingThePush(_ implementation: Implementation) async {
        let rig = ScenarioRig(implementation)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 1)
        let correct =
            rig.system.violations.isEmpty && rig.device.offences == 0
            && rig.system.call(rig.uuid(call))?.state == .ringing
        #expect(correct == (implementation == .ours), "\(rig.system.violations)")
    }

    /// B1: the media engine exists before the call system activates the session: audio must
    /// wait for the activation.
    @Test(arguments: Implementation.allCases)
    func noAudioWhenTheEngineStartsBeforeActivation(_ implementation: Implementation) async throws {
        let rig = ScenarioRig(implementation) { $0.audioActivationDelay = 1.0 }
        let call = rig.backend.ring()
        await rig.events(rig.backend.change(call.id) { _ in })
        try rig.system.userAnswers(rig.system.liveCalls.first!.uuid)
        await rig.run(seconds: 3)
        let session = rig.media.session(call.id)
        let correct = session?.status.audioFlowing == true && session?.status.audioStartsWithoutSession == 0
        #expect(correct == (implementation == .ours), "\(String(describing: session?.status))")
    }

    /// B2: the session is activated before the engine exists: audio must start when it does.
    @Test(arguments: Implementation.allCases)
    func noAudioWhenActivationComesBeforeTheEngine(_ implementation: Implementation) async throws {
        let rig = ScenarioRig(implementation, naiveAudio: .startOnActivation)
        rig.media.configure { $0.joinDelay = 1.0 }
        let call = rig.backend.ring()
        await rig.events(rig.backend.change(call.id) { _ in })
        try rig.system.userAnswers(rig.system.liveCalls.first!.uuid)
        await rig.run(seconds: 3)
        let correct = rig.media.session(call.id)?.status.audioFlowing == true
        #expect(correct == (implementation == .ours))
        if implementation == .ours {
            // The answer was fulfilled only once media joined, within the deadline.
            #expect(rig.system.call(rig.uuid(call))?.state == .connected)
            #expect(rig.backend.info(call.id)?.state == .active)
        }
    }

    /// C: the remote hangs up: the call system hears it (remote ended), no call screen is left.
    @Test(arguments: Implementation.allCases)
    func callScreenLeftUpAfterTheRemoteHungUp(_ implementation: Implementation) async throws {
        let rig = ScenarioRig(implementation)
        let call = rig.backend.ring()
        await rig.events(rig.backend.change(call.id) { _ in })
        try rig.system.userAnswers(rig.system.liveCalls.first!.uuid)
        await rig.run(seconds: 2)
        await rig.events(rig.backend.endCall(call.id, reason: .completed))
        await rig.run(seconds: 1)
        let correct =
            rig.system.liveCalls.isEmpty && rig.system.calls.first?.endReason == .remoteEnded
            && !rig.system.audioSessionActive
        #expect(correct == (implementation == .ours), "\(rig.system.calls)")
    }

    /// D: a push and an event for one call show one incoming-call screen.
    @Test(arguments: Implementation.allCases)
    func twoIncomingCallScreensForOneCall(_ implementation: Implementation) async {
        let rig = ScenarioRig(implementation)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.events(rig.backend.change(call.id) { _ in })
        await rig.run(seconds: 1)
        let correct = rig.system.liveCalls.map(\.uuid) == [rig.uuid(call)] && rig.system.violations.isEmpty
        #expect(correct == (implementation == .ours), "\(rig.system.calls)")
    }

    /// E: a dial whose media failed must end in the call system too, or the zombie blocks the
    /// next dial with "maximum call groups reached" (one call group, as many apps configure).
    @Test(arguments: Implementation.allCases)
    func maximumCallGroupsReachedAfterAFailedDial(_ implementation: Implementation) async throws {
        let rig = ScenarioRig(implementation) { $0.maximumCallGroups = 1 }
        let first = try await rig.coordinator.startCall(
            scopeKind: .conversation, scopeID: "conv-bob", mode: .audio, handle: "bob", clientID: UUID())
        await rig.run(seconds: 1)
        rig.backend.fail("mediaToken", times: 2)  // the media service is down (an early ask and the retry)
        let accepted = rig.backend.change(first) { call in
            call.state = .active
            call.invitations[0].state = .accepted
        }
        await rig.events(accepted)
        await rig.run(seconds: 1)
        let second = try await rig.coordinator.startCall(
            scopeKind: .conversation, scopeID: "conv-bob", mode: .audio, handle: "bob", clientID: UUID())
        await rig.run(seconds: 1)
        let secondCall = rig.system.call(CallIdentity.uuid(forCallID: second))
        let correct =
            secondCall != nil && secondCall?.state != .ended
            && rig.system.call(CallIdentity.uuid(forCallID: first))?.state == .ended
        #expect(correct == (implementation == .ours), "\(rig.system.log)")
        if implementation == .ours {
            #expect(rig.system.call(CallIdentity.uuid(forCallID: first))?.endReason == .failed)
            #expect(rig.backend.info(first)?.state == .ended, "the callee must not be left in a dead call")
        }
    }

    /// F: answered from the lock screen while the app is in the background: the answer reaches
    /// the server and media, not a UI that is not there.
    @Test(arguments: Implementation.allCases)
    func answerTappedWhileTheAppIsInTheBackground(_ implementation: Implementation) async throws {
        let rig = ScenarioRig(implementation)
        (rig.coordinator as? NaiveCoordinator)?.setUIAttached(false)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 1)
        guard let shown = rig.system.liveCalls.first else {
            #expect(implementation == .naive)
            return
        }
        try rig.system.userAnswers(shown.uuid)
        await rig.run(seconds: 2)
        let correct =
            rig.backend.info(call.id)?.state == .active && rig.media.session(call.id)?.status.audioFlowing == true
        #expect(correct == (implementation == .ours))
    }

    /// G: another device of the same user answered: this one stops ringing (answered elsewhere),
    /// even with the app's own event feed not running.
    @Test(arguments: Implementation.allCases)
    func ringingOnASecondDeviceAfterTheFirstAnswered(_ implementation: Implementation) async {
        let rig = ScenarioRig(implementation)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 1)
        let elsewhere = rig.backend.change(call.id) { call in
            call.state = .active
            call.invitations[0].state = .accepted
            call.participants.append(CallParticipantInfo(userId: "me", joinedAt: call.createdAt, leftAt: nil))
        }
        if implementation == .naive { await rig.events(elsewhere) }  // the naive one has no feed of its own
        await rig.run(seconds: 1)
        let ended = rig.system.calls.first
        let correct = rig.system.liveCalls.isEmpty && ended?.endReason == .answeredElsewhere
        #expect(correct == (implementation == .ours), "\(rig.system.calls)")
        if implementation == .ours { #expect(rig.backend.info(call.id)?.state == .active, "must not decline or leave") }
    }

    /// H: a push that arrives after the call ended is still reported, then ended at once.
    @Test(arguments: Implementation.allCases)
    func stalePushForAnAlreadyEndedCall(_ implementation: Implementation) async {
        let rig = ScenarioRig(implementation)
        let call = rig.backend.ring()
        rig.backend.endCall(call.id, reason: .missed)
        rig.push(call)
        await rig.run(seconds: 1)
        let correct =
            rig.system.violations.isEmpty && rig.system.liveCalls.isEmpty
            && rig.system.call(rig.uuid(call))?.endReason == .unanswered
        #expect(correct == (implementation == .ours), "\(rig.system.violations) \(rig.system.calls)")
    }
}
