// The README's "Testing your app" example, word for word: an app's own test, written against
// the public API only (`make test` type-checks this file outside the package, where `package`
// symbols are hidden, with scripts/check-public-testing-api.sh). Keep the two in step.
import Foundation
import SwitchboardKit
import SwitchboardKitTesting
import Testing

/// The app's own server double: one call from Alice, and every action the phone sends. An
/// actor: its state is its own, with no lock to write.
actor MyBackend: CallBackend {
    private var info = CallInfo(
        id: "call-1", scopeKind: .conversation, scopeId: "c1", mode: .audio, state: .ringing, endReason: nil,
        createdBy: "alice", createdAt: "2026-12-07T10:00:00.000Z", answeredAt: nil, endedAt: nil,
        invitations: [CallInvitationInfo(userId: "me", state: .ringing, updatedAt: "2026-12-07T10:00:00.000Z")],
        participants: [])
    private(set) var actions: [CallAction] = []

    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo {
        info
    }
    func call(_ callID: String) async throws -> CallInfo { info }
    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo {
        actions.append(action)
        info.state = action == .accept ? .active : .ended
        if action != .accept { info.endReason = action == .decline ? .declined : .completed }
        return info
    }
    func mediaToken(forCall callID: String) async throws -> MediaToken {
        MediaToken(url: "wss://media.example", token: "t", expiresAt: "2026-12-07T10:01:00.000Z")
    }
    func eventCursor() async throws -> Int64 { 0 }
    func events(after: Int64, wait: Int) async throws -> EventsPage { EventsPage(events: [], cursor: after) }
}

@Suite("An app's own test, on the public testing API", .timeLimit(.minutes(1)))
struct AppTestExampleTests {
    @Test func aRingIsAnsweredAndHungUpWithinCallKitsRules() async throws {
        let clock = ManualClock()
        let callKit = SimulatedCallSystem(clock: clock)
        let media = SimulatedMedia(clock: clock)
        media.attach(callKit)
        let backend = MyBackend()
        let coordinator = CallCoordinator(
            userID: "me", backend: backend, callSystem: callKit, media: { media.makeSession($0) }, clock: clock)
        defer { coordinator.shutdown() }

        // A VoIP push rings the phone; the user answers on the lock screen.
        let push = VoIPPayload(
            callId: "call-1", scopeKind: .conversation, scopeId: "c1", mode: .audio, callerName: "Alice")
        #expect(callKit.deliverVoIPPush(push, to: coordinator))
        await clock.run(seconds: 1, settling: callKit)
        let uuid = CallIdentity.uuid(forCallID: "call-1")
        try callKit.userAnswers(uuid)
        await clock.run(seconds: 2, settling: callKit)
        await coordinator.settle()
        #expect(callKit.call(uuid)?.state == .connected)

        // The user hangs up; the server is told, and CallKit's rules held throughout.
        try callKit.userEnds(uuid)
        await clock.run(seconds: 1, settling: callKit)
        await coordinator.settle()
        #expect(await backend.actions == [.accept, .leave])
        try callKit.checkContract(expectingNoCalls: true)
    }
}
