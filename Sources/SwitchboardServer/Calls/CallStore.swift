import Foundation
import SwitchboardCore
import SwitchboardStore
import SwitchboardWire

/// How calls' times are stored (milliseconds since 1970) and how a call is shown on the wire.
/// (The call tables are ``CallRepository``'s.)
enum CallStore {
    static func milliseconds(_ date: Date) -> Int64 { StoredTime.milliseconds(date) }
    static func date(_ milliseconds: Int64) -> Date { StoredTime.date(milliseconds) }

    /// The wire shape.
    static func info(_ call: CallRecord) -> CallInfo {
        CallInfo(
            id: call.id, scopeKind: call.scopeKind, scopeId: call.scopeID,
            mode: call.mode, state: call.state,
            endReason: call.endReason, createdBy: call.createdBy,
            createdAt: Timestamp.iso8601(call.createdAt), answeredAt: call.answeredAt.map(Timestamp.iso8601),
            endedAt: call.endedAt.map(Timestamp.iso8601),
            invitations: call.invitations.map {
                CallInvitationInfo(
                    userId: $0.userID, state: $0.state,
                    updatedAt: Timestamp.iso8601($0.updatedAt))
            },
            participants: call.participants.map {
                CallParticipantInfo(
                    userId: $0.userID, joinedAt: Timestamp.iso8601($0.joinedAt),
                    leftAt: $0.leftAt.map(Timestamp.iso8601))
            })
    }
}
