import Foundation
import SwitchboardCore
import SwitchboardWire

/// ``CallRepository`` in SQL that SQLite and PostgreSQL both run (tables `calls`, `call_invitations`,
/// `call_participants`, `call_occupants`), working on the connection of one transaction or
/// snapshot.
package struct SQLCallRepository: CallRepository {
    package let connection: any SQLExecutor

    private static func date(_ milliseconds: Int64) -> Date { StoredTime.date(milliseconds) }
    private static func date(_ milliseconds: Int64?) -> Date? { milliseconds.map(StoredTime.date) }
    private static func value(_ date: Date?) -> SQLiteValue {
        date.map { .integer(StoredTime.milliseconds($0)) } ?? .null
    }
    private static func milliseconds(_ date: Date) -> Int64 { StoredTime.milliseconds(date) }

    package func load(_ callID: String) throws -> StoredCall? {
        guard let row = try connection.query("SELECT * FROM calls WHERE id = ?", [.text(callID)]).first else {
            return nil
        }
        let invitations = try connection.query(
            "SELECT user_id, state, updated_at_ms FROM call_invitations WHERE call_id = ? ORDER BY \(connection.dialect.insertionOrder)",
            [.text(callID)]
        ).map { row in
            CallInvitation(
                userID: try row.string("user_id"), state: try row.known("state", as: InvitationState.self),
                updatedAt: Self.date(try row.int64("updated_at_ms")))
        }
        let participants = try connection.query(
            "SELECT user_id, joined_at_ms, left_at_ms FROM call_participants WHERE call_id = ? ORDER BY \(connection.dialect.insertionOrder)",
            [.text(callID)]
        ).map { row in
            CallParticipant(
                userID: try row.string("user_id"), joinedAt: Self.date(try row.int64("joined_at_ms")),
                leftAt: Self.date(try row.optionalInt64("left_at_ms")))
        }
        let call = CallRecord(
            id: try row.string("id"), scopeKind: try row.known("scope_kind", as: ScopeKind.self),
            scopeID: try row.string("scope_id"), mode: try row.known("mode", as: CallMode.self),
            state: try row.known("state", as: CallState.self),
            endReason: try row.optionalString("end_reason") == nil
                ? nil : try row.known("end_reason", as: CallInfo.EndReason.self),
            createdBy: try row.string("created_by"), createdAt: Self.date(try row.int64("created_at_ms")),
            answeredAt: Self.date(try row.optionalInt64("answered_at_ms")),
            endedAt: Self.date(try row.optionalInt64("ended_at_ms")),
            ringDeadline: Self.date(try row.int64("ring_deadline_ms")), roomName: try row.string("room_name"),
            emptySince: Self.date(try row.optionalInt64("empty_since_ms")), invitations: invitations,
            participants: participants)
        return StoredCall(call: call, version: try row.int64("version"))
    }

    package func call(createdBy callerID: String, clientID: String) throws -> StoredCall? {
        guard
            let row = try connection.query(
                "SELECT id FROM calls WHERE created_by = ? AND client_id = ?", [.text(callerID), .text(clientID)]
            ).first
        else { return nil }
        return try load(try row.string("id"))
    }

    package func insert(_ call: CallRecord, clientID: String) throws {
        do {
            try insertRow(call, clientID: clientID)
        } catch let error as StoreError where error.isUniqueViolation(naming: "calls.scope", "calls_live_per_scope") {
            throw CallTransitionError.busy  // the scope already has a live call
        }
        try saveMembers(call)
    }

    private func insertRow(_ call: CallRecord, clientID: String) throws {
        try connection.run(
            """
            INSERT INTO calls (id, scope_kind, scope_id, mode, state, end_reason, created_by, client_id, created_at_ms,
                answered_at_ms, ended_at_ms, ring_deadline_ms, room_name, empty_since_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(call.id), .text(call.scopeKind.rawValue), .text(call.scopeID), .text(call.mode.rawValue),
                .text(call.state.rawValue),
                call.endReason.map { .text($0.rawValue) } ?? .null, .text(call.createdBy), .text(clientID),
                .integer(Self.milliseconds(call.createdAt)), Self.value(call.answeredAt), Self.value(call.endedAt),
                .integer(Self.milliseconds(call.ringDeadline)), .text(call.roomName), Self.value(call.emptySince),
            ])
    }

    package func update(_ call: CallRecord, from version: Int64) throws -> Bool {
        let changed = try connection.run(
            """
            UPDATE calls SET state = ?, end_reason = ?, answered_at_ms = ?, ended_at_ms = ?, empty_since_ms = ?,
                version = version + 1
            WHERE id = ? AND version = ?
            """,
            [
                .text(call.state.rawValue), call.endReason.map { .text($0.rawValue) } ?? .null,
                Self.value(call.answeredAt),
                Self.value(call.endedAt), Self.value(call.emptySince), .text(call.id), .integer(version),
            ])
        guard changed == 1 else { return false }
        try saveMembers(call)
        return true
    }

    private func saveMembers(_ call: CallRecord) throws {
        for invitation in call.invitations {
            try connection.run(
                """
                INSERT INTO call_invitations (call_id, user_id, state, updated_at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (call_id, user_id) DO UPDATE SET state = excluded.state, updated_at_ms = excluded.updated_at_ms
                """,
                [
                    .text(call.id), .text(invitation.userID), .text(invitation.state.rawValue),
                    .integer(Self.milliseconds(invitation.updatedAt)),
                ])
        }
        for participant in call.participants {
            try connection.run(
                """
                INSERT INTO call_participants (call_id, user_id, joined_at_ms, left_at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (call_id, user_id) DO UPDATE SET joined_at_ms = excluded.joined_at_ms, left_at_ms = excluded.left_at_ms
                """,
                [
                    .text(call.id), .text(participant.userID), .integer(Self.milliseconds(participant.joinedAt)),
                    Self.value(participant.leftAt),
                ])
        }
        // Occupancy follows the record: the caller while it rings, present participants while active.
        try connection.run("DELETE FROM call_occupants WHERE call_id = ?", [.text(call.id)])
        let occupants: [String]
        switch call.state {
        case .ringing: occupants = [call.createdBy]
        case .active: occupants = call.presentUserIDs
        case .ended, .unknown: occupants = []
        }
        for userID in occupants {
            do {
                try connection.run(
                    "INSERT INTO call_occupants (user_id, call_id) VALUES (?, ?)", [.text(userID), .text(call.id)])
            } catch let error as StoreError where error.constraint == .primaryKey || error.constraint == .unique {
                throw CallTransitionError.busy
            }
        }
    }

    package func busyUsers(_ userIDs: [String], excluding callID: String?) throws -> Set<String> {
        var busy = Set<String>()
        for userID in userIDs {
            if let row = try connection.query("SELECT call_id FROM call_occupants WHERE user_id = ?", [.text(userID)])
                .first,
                try row.string("call_id") != callID
            {
                busy.insert(userID)
            }
        }
        return busy
    }

    package func liveCallID(scopeKind: ScopeKind, scopeID: String) throws -> String? {
        try connection.query(
            "SELECT id FROM calls WHERE scope_kind = ? AND scope_id = ? AND state != 'ended'",
            [.text(scopeKind.rawValue), .text(scopeID)]
        ).first.map { try $0.string("id") }
    }

    package func liveCallIDs(involving userID: String) throws -> [String] {
        try connection.query(
            """
            SELECT c.id FROM calls c WHERE c.state != 'ended' AND (
                EXISTS (SELECT 1 FROM call_invitations i WHERE i.call_id = c.id AND i.user_id = ?1 AND i.state = 'ringing')
                OR EXISTS (SELECT 1 FROM call_occupants o WHERE o.call_id = c.id AND o.user_id = ?1))
            ORDER BY c.created_at_ms, c.id
            """,
            [.text(userID)]
        ).map { try $0.string("id") }
    }

    package func endedCallIDs(scopeKind: ScopeKind, scopeID: String, limit: Int) throws -> [String] {
        try connection.query(
            "SELECT id FROM calls WHERE scope_kind = ? AND scope_id = ? AND state = 'ended' ORDER BY ended_at_ms DESC, id LIMIT ?",
            [.text(scopeKind.rawValue), .text(scopeID), .integer(Int64(limit))]
        ).map { try $0.string("id") }
    }

    package func ringTimedOutCallIDs(at nowMS: Int64) throws -> [String] {
        try connection.query(
            """
            SELECT c.id FROM calls c WHERE c.state != 'ended' AND c.ring_deadline_ms <= ?
            AND EXISTS (SELECT 1 FROM call_invitations i WHERE i.call_id = c.id AND i.state = 'ringing')
            """,
            [.integer(nowMS)]
        ).map { try $0.string("id") }
    }

    package func activeRooms() throws -> [(callID: String, roomName: String)] {
        try connection.query("SELECT id, room_name FROM calls WHERE state = 'active'", []).map {
            (try $0.string("id"), try $0.string("room_name"))
        }
    }

    package func liveCallIDs(limit: Int) throws -> [String] {
        try connection.query(
            "SELECT id FROM calls WHERE state != 'ended' ORDER BY created_at_ms DESC, id LIMIT ?",
            [.integer(Int64(max(0, limit)))]
        ).map { try $0.string("id") }
    }

    package func callTimings(sinceMS: Int64) throws -> [CallTiming] {
        try connection.query(
            "SELECT id, created_at_ms, answered_at_ms FROM calls WHERE created_at_ms >= ? ORDER BY created_at_ms LIMIT 20000",
            [.integer(sinceMS)]
        ).map {
            CallTiming(
                callID: try $0.string("id"), createdAtMS: try $0.int64("created_at_ms"),
                answeredAtMS: try $0.optionalInt64("answered_at_ms"))
        }
    }

    package func rings(_ callID: String, userID: String) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM calls c JOIN call_invitations i ON i.call_id = c.id AND i.user_id = ?2
            WHERE c.id = ?1 AND c.state != 'ended' AND i.state = 'ringing'
            """,
            [.text(callID), .text(userID)]
        ).isEmpty
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
