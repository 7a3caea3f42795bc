import Foundation
import SwitchboardCore
import SwitchboardStore
import SwitchboardWire

/// Loads and saves `CallRecord`s; the only code that knows the call tables.
enum CallStore {
    /// A stored call and the version it was read at.
    struct Versioned: Sendable {
        let call: CallRecord
        let version: Int64
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    private static func date(_ milliseconds: Int64?) -> Date? { milliseconds.map(date) }
    private static func value(_ date: Date?) -> SQLiteValue { date.map { .integer(milliseconds($0)) } ?? .null }

    static func load(_ callID: String, in connection: SQLiteConnection) throws -> Versioned? {
        guard let row = try connection.query("SELECT * FROM calls WHERE id = ?", [.text(callID)]).first else { return nil }
        let invitations = try connection.query(
            "SELECT user_id, state, updated_at_ms FROM call_invitations WHERE call_id = ? ORDER BY rowid", [.text(callID)]
        ).map { row in
            CallInvitation(
                userID: try row.string("user_id"), state: SwitchboardCore.InvitationState(rawValue: try row.string("state")) ?? .cancelled,
                updatedAt: date(try row.int64("updated_at_ms")))
        }
        let participants = try connection.query(
            "SELECT user_id, joined_at_ms, left_at_ms FROM call_participants WHERE call_id = ? ORDER BY rowid", [.text(callID)]
        ).map { row in
            CallParticipant(userID: try row.string("user_id"), joinedAt: date(try row.int64("joined_at_ms")), leftAt: date(try row.optionalInt64("left_at_ms")))
        }
        let call = CallRecord(
            id: try row.string("id"), scopeKind: CallScopeKind(rawValue: try row.string("scope_kind")) ?? .conversation,
            scopeID: try row.string("scope_id"), mode: SwitchboardCore.CallMode(rawValue: try row.string("mode")) ?? .audio,
            state: SwitchboardCore.CallState(rawValue: try row.string("state")) ?? .ended,
            endReason: try row.optionalString("end_reason").flatMap(SwitchboardCore.CallEndReason.init(rawValue:)),
            createdBy: try row.string("created_by"), createdAt: date(try row.int64("created_at_ms")),
            answeredAt: date(try row.optionalInt64("answered_at_ms")), endedAt: date(try row.optionalInt64("ended_at_ms")),
            ringDeadline: date(try row.int64("ring_deadline_ms")), roomName: try row.string("room_name"),
            emptySince: date(try row.optionalInt64("empty_since_ms")), invitations: invitations, participants: participants)
        return Versioned(call: call, version: try row.int64("version"))
    }

    /// Inserts a new call. Throws `CallTransitionError.busy` when the caller already is in a call.
    static func insert(_ call: CallRecord, clientID: String, in connection: SQLiteConnection) throws {
        try connection.run(
            """
            INSERT INTO calls (id, scope_kind, scope_id, mode, state, end_reason, created_by, client_id, created_at_ms,
                answered_at_ms, ended_at_ms, ring_deadline_ms, room_name, empty_since_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(call.id), .text(call.scopeKind.rawValue), .text(call.scopeID), .text(call.mode.rawValue), .text(call.state.rawValue),
             call.endReason.map { .text($0.rawValue) } ?? .null, .text(call.createdBy), .text(clientID),
             .integer(milliseconds(call.createdAt)), value(call.answeredAt), value(call.endedAt),
             .integer(milliseconds(call.ringDeadline)), .text(call.roomName), value(call.emptySince)])
        try saveMembers(call, in: connection)
    }

    /// Stores a transition's result if the call is still at `version`; returns false when
    /// another transition got there first. Throws `CallTransitionError.busy` when it would put
    /// a user in two calls at once.
    static func update(_ call: CallRecord, from version: Int64, in connection: SQLiteConnection) throws -> Bool {
        let changed = try connection.run(
            """
            UPDATE calls SET state = ?, end_reason = ?, answered_at_ms = ?, ended_at_ms = ?, empty_since_ms = ?,
                version = version + 1
            WHERE id = ? AND version = ?
            """,
            [.text(call.state.rawValue), call.endReason.map { .text($0.rawValue) } ?? .null, value(call.answeredAt),
             value(call.endedAt), value(call.emptySince), .text(call.id), .integer(version)])
        guard changed == 1 else { return false }
        try saveMembers(call, in: connection)
        return true
    }

    private static func saveMembers(_ call: CallRecord, in connection: SQLiteConnection) throws {
        for invitation in call.invitations {
            try connection.run(
                """
                INSERT INTO call_invitations (call_id, user_id, state, updated_at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (call_id, user_id) DO UPDATE SET state = excluded.state, updated_at_ms = excluded.updated_at_ms
                """,
                [.text(call.id), .text(invitation.userID), .text(invitation.state.rawValue), .integer(milliseconds(invitation.updatedAt))])
        }
        for participant in call.participants {
            try connection.run(
                """
                INSERT INTO call_participants (call_id, user_id, joined_at_ms, left_at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (call_id, user_id) DO UPDATE SET joined_at_ms = excluded.joined_at_ms, left_at_ms = excluded.left_at_ms
                """,
                [.text(call.id), .text(participant.userID), .integer(milliseconds(participant.joinedAt)), value(participant.leftAt)])
        }
        // Occupancy follows the record: the caller while it rings, present participants while active.
        try connection.run("DELETE FROM call_occupants WHERE call_id = ?", [.text(call.id)])
        let occupants: [String]
        switch call.state {
        case .ringing: occupants = [call.createdBy]
        case .active: occupants = call.presentUserIDs
        case .ended: occupants = []
        }
        for userID in occupants {
            do {
                try connection.run("INSERT INTO call_occupants (user_id, call_id) VALUES (?, ?)", [.text(userID), .text(call.id)])
            } catch let error as StoreError where error.constraint == .primaryKey || error.constraint == .unique {
                throw CallTransitionError.busy
            }
        }
    }

    /// Those of `userIDs` who are in a ringing or active call other than `excluding`.
    static func busyUsers(_ userIDs: [String], excluding callID: String? = nil, in connection: SQLiteConnection) throws -> Set<String> {
        var busy = Set<String>()
        for userID in userIDs {
            if let row = try connection.query("SELECT call_id FROM call_occupants WHERE user_id = ?", [.text(userID)]).first,
                try row.string("call_id") != callID
            {
                busy.insert(userID)
            }
        }
        return busy
    }

    /// The ringing or active call of a scope.
    static func liveCallID(scopeKind: CallScopeKind, scopeID: String, in connection: SQLiteConnection) throws -> String? {
        try connection.query(
            "SELECT id FROM calls WHERE scope_kind = ? AND scope_id = ? AND state != 'ended'", [.text(scopeKind.rawValue), .text(scopeID)]
        ).first.map { try $0.string("id") }
    }

    /// The wire shape.
    static func info(_ call: CallRecord) -> CallInfo {
        CallInfo(
            id: call.id, scopeKind: .init(rawValue: call.scopeKind.rawValue), scopeId: call.scopeID,
            mode: .init(rawValue: call.mode.rawValue), state: .init(rawValue: call.state.rawValue),
            endReason: call.endReason.map { .init(rawValue: $0.rawValue) }, createdBy: call.createdBy,
            createdAt: Timestamp.iso8601(call.createdAt), answeredAt: call.answeredAt.map(Timestamp.iso8601),
            endedAt: call.endedAt.map(Timestamp.iso8601),
            invitations: call.invitations.map {
                CallInvitationInfo(userId: $0.userID, state: .init(rawValue: $0.state.rawValue), updatedAt: Timestamp.iso8601($0.updatedAt))
            },
            participants: call.participants.map {
                CallParticipantInfo(userId: $0.userID, joinedAt: Timestamp.iso8601($0.joinedAt), leftAt: $0.leftAt.map(Timestamp.iso8601))
            })
    }
}
