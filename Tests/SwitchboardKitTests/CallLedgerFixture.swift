import Foundation
import Testing
import SwitchboardKit
import SwitchboardWire

/// Calls, tokens and pushes the ledger tests feed in.
enum Fixture {
    static let stamp = "2026-11-30T00:00:00.000Z"
    static let token = MediaToken(url: "wss://media.test", token: "token", expiresAt: stamp)

    /// Alice calls me.
    static func ringing(id: String = "call-1") -> CallInfo {
        CallInfo(
            id: id, scopeKind: .conversation, scopeId: "conv-alice", mode: .audio, state: .ringing, endReason: nil,
            createdBy: "alice", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "me", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: "alice", joinedAt: stamp, leftAt: nil)])
    }

    /// I call Bob.
    static func outgoing(id: String = "call-out") -> CallInfo {
        CallInfo(
            id: id, scopeKind: .conversation, scopeId: "conv-bob", mode: .audio, state: .ringing, endReason: nil,
            createdBy: "me", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "bob", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: "me", joinedAt: stamp, leftAt: nil)])
    }

    static func ended(_ call: CallInfo, reason: CallInfo.EndReason) -> CallInfo {
        var call = call
        call.state = .ended
        call.endReason = reason
        call.endedAt = stamp
        for index in call.invitations.indices where call.invitations[index].state == .ringing {
            call.invitations[index].state = reason == .missed ? .missed : (reason == .busy ? .busy : .cancelled)
        }
        for index in call.participants.indices { call.participants[index].leftAt = stamp }
        return call
    }

    static func accepted(_ call: CallInfo) -> CallInfo {
        var call = call
        call.state = .active
        call.answeredAt = stamp
        call.invitations[0].state = .accepted
        call.participants.append(CallParticipantInfo(userId: "me", joinedAt: stamp, leftAt: nil))
        return call
    }

    static func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }

    static func push(_ call: CallInfo) -> IncomingCallPush {
        IncomingCallPush(
            callID: call.id, scopeKind: call.scopeKind, scopeID: call.scopeId, mode: call.mode,
            callerName: call.createdBy)
    }

    /// Push, report, answer action, server accept, media token; media joined when `join`.
    static func answer(_ ledger: inout CallLedger, _ call: CallInfo, action: UUID, join: Bool) {
        let uuid = uuid(call)
        if ledger.entries[call.id] == nil {
            _ = ledger.pushReceived(push(call), mustReport: true, placeholder: UUID())
            _ = ledger.reportCompleted(uuid, error: nil)
        }
        #expect(
            ledger.actionPerformed(id: action, CallActionRequest(callUUID: uuid, kind: .answer)) == [
                .server(callID: call.id, .accept),
                .schedule(callID: call.id, .answerDeadline, afterSeconds: 10),
            ])
        #expect(
            ledger.serverAnswered(call.id, .accept, .call(accepted(call))) == [.server(callID: call.id, .mediaToken)])
        #expect(ledger.serverAnswered(call.id, .mediaToken, .mediaToken(token)) == [.joinMedia(callID: call.id, token)])
        if join { _ = ledger.mediaJoined(call.id, succeeded: true) }
    }
}
