// Only these two imports, on purpose: an app's own `CallBackend` double must compile with
// `import SwitchboardKit` alone (it re-exports the wire types). Do not add `SwitchboardWire`.
import Foundation
import SwitchboardKit
import Testing

/// An app's test double: a server with one ringing call, in a few lines.
private final class AppCallBackend: CallBackend {
    let call = CallInfo(
        id: "call-1", scopeKind: .conversation, scopeId: "conv-1", mode: .video, state: .ringing, endReason: nil,
        createdBy: "alice", createdAt: "2026-11-30T00:00:00.000Z", answeredAt: nil, endedAt: nil,
        invitations: [CallInvitationInfo(userId: "me", state: .ringing, updatedAt: "2026-11-30T00:00:00.000Z")],
        participants: [])

    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo {
        call
    }
    func call(_ callID: String) async throws -> CallInfo { call }
    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo {
        var answered = call
        answered.state = action == .accept ? .active : .ended
        answered.endReason = action == .accept ? nil : .declined
        return answered
    }
    func mediaToken(forCall callID: String) async throws -> MediaToken {
        MediaToken(url: "wss://media.test", token: "t", expiresAt: "2026-11-30T00:00:30.000Z")
    }
    func eventCursor() async throws -> Int64 { 0 }
    func events(after: Int64, wait: Int) async throws -> EventsPage { EventsPage(events: [], cursor: after) }
}

@Suite("One import: an app's CallBackend double needs only SwitchboardKit", .timeLimit(.minutes(1)))
struct OneImportTests {
    @Test func aDoubleWrittenWithOnlyTheSDKImportServesTheSDKsTypes() async throws {
        let backend: any CallBackend = AppCallBackend()
        let declined = try await backend.perform(.decline, onCall: "call-1")
        #expect(declined.state == .ended && declined.endReason == .declined)
        #expect(CallLedger.endReason(serverReason: declined.endReason) == .remoteEnded)
        let accepted = try await backend.perform(.accept, onCall: "call-1")
        #expect(accepted.state == .active && accepted.mode == .video)
    }
}
