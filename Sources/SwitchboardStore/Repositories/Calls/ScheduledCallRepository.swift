/// A stored scheduled call.
package struct StoredScheduledCall: Sendable, Equatable {
    package var id: String
    package var groupID: String
    package var title: String?
    package var mode: String
    package var startsAtMS: Int64
    package var createdBy: String
    package var createdAt: String
    package var callID: String?
    package var cancelledAt: String?

    package init(
        id: String, groupID: String, title: String? = nil, mode: String, startsAtMS: Int64, createdBy: String,
        createdAt: String, callID: String? = nil, cancelledAt: String? = nil
    ) {
        self.id = id
        self.groupID = groupID
        self.title = title
        self.mode = mode
        self.startsAtMS = startsAtMS
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.callID = callID
        self.cancelledAt = cancelledAt
    }
}

/// Scheduled group calls and their pre-authorisations.
///
/// - `scheduled_calls`: a group's planned calls; `call_id` is the group call that started it.
/// - `call_preauthorizations`: single-use capabilities (the SHA-256 of a random token), each for
///   one user and one scheduled call, until `expires_at_ms`; `used_at` once redeemed.
package protocol ScheduledCallRepository {
    func insert(_ call: StoredScheduledCall) throws
    func scheduledCall(_ id: String) throws -> StoredScheduledCall?
    /// The group's calls not cancelled that start at or after `fromMS`, ascending.
    func upcoming(inGroup groupID: String, from fromMS: Int64) throws -> [StoredScheduledCall]
    /// The calls not cancelled that start at or after `fromMS` in the live groups `userID`
    /// belongs to, ascending, at most `limit`.
    func upcoming(forMember userID: String, from fromMS: Int64, limit: Int) throws -> [StoredScheduledCall]
    func cancel(_ id: String, at timestamp: String) throws
    /// Links the group's scheduled call starting nearest to `nowMS`, within
    /// `earliestMS...latestMS` of start times and not linked or cancelled, to `callID`;
    /// answers it, or nil when there is none.
    func link(
        callID: String, inGroup groupID: String, nowMS: Int64, startsWithin earliestMS: Int64, _ latestMS: Int64
    ) throws -> StoredScheduledCall?

    func insertPreauthorization(tokenHash: [UInt8], scheduledCallID: String, userID: String, expiresAtMS: Int64) throws
    /// Marks the pre-authorisation used if it is `userID`'s, unused, unexpired at `nowMS` and
    /// its scheduled call was started by `callID`: true when it was redeemed now.
    func redeem(tokenHash: [UInt8], userID: String, callID: String, nowMS: Int64, at timestamp: String) throws -> Bool
    /// Deletes pre-authorisations expired before `beforeMS`; answers how many.
    func prunePreauthorizations(expiredBefore beforeMS: Int64) throws -> Int
}

/// ``ScheduledCallRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLScheduledCallRepository: ScheduledCallRepository {
    package let connection: any SQLExecutor

    private static let columns =
        "id, group_id, title, mode, starts_at_ms, created_by, created_at, call_id, cancelled_at"

    private static func row(_ row: SQLiteRow) throws -> StoredScheduledCall {
        StoredScheduledCall(
            id: try row.string("id"), groupID: try row.string("group_id"), title: try row.optionalString("title"),
            mode: try row.string("mode"),
            startsAtMS: try row.int64("starts_at_ms"), createdBy: try row.string("created_by"),
            createdAt: try row.string("created_at"),
            callID: try row.optionalString("call_id"), cancelledAt: try row.optionalString("cancelled_at"))
    }

    package func insert(_ call: StoredScheduledCall) throws {
        try connection.run(
            "INSERT INTO scheduled_calls (\(Self.columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            [
                .text(call.id), .text(call.groupID), call.title.map { .text($0) } ?? .null, .text(call.mode),
                .integer(call.startsAtMS),
                .text(call.createdBy), .text(call.createdAt), call.callID.map { .text($0) } ?? .null,
                call.cancelledAt.map { .text($0) } ?? .null,
            ])
    }

    package func scheduledCall(_ id: String) throws -> StoredScheduledCall? {
        try connection.query("SELECT \(Self.columns) FROM scheduled_calls WHERE id = ?1", [.text(id)]).first.map(
            Self.row)
    }

    package func upcoming(inGroup groupID: String, from fromMS: Int64) throws -> [StoredScheduledCall] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM scheduled_calls
            WHERE group_id = ?1 AND cancelled_at IS NULL AND starts_at_ms >= ?2 ORDER BY starts_at_ms, id
            """,
            [.text(groupID), .integer(fromMS)]
        ).map(Self.row)
    }

    package func upcoming(forMember userID: String, from fromMS: Int64, limit: Int) throws -> [StoredScheduledCall] {
        try connection.query(
            """
            SELECT s.id, s.group_id, s.title, s.mode, s.starts_at_ms, s.created_by, s.created_at, s.call_id, s.cancelled_at
            FROM scheduled_calls s
            JOIN group_members m ON m.group_id = s.group_id AND m.user_id = ?1
            JOIN groups g ON g.id = s.group_id AND g.dissolved_at IS NULL
            WHERE s.cancelled_at IS NULL AND s.starts_at_ms >= ?2
            ORDER BY s.starts_at_ms, s.id LIMIT ?3
            """,
            [.text(userID), .integer(fromMS), .integer(Int64(limit))]
        ).map(Self.row)
    }

    package func cancel(_ id: String, at timestamp: String) throws {
        try connection.run(
            "UPDATE scheduled_calls SET cancelled_at = ?2 WHERE id = ?1 AND cancelled_at IS NULL",
            [.text(id), .text(timestamp)])
    }

    package func link(
        callID: String, inGroup groupID: String, nowMS: Int64, startsWithin earliestMS: Int64, _ latestMS: Int64
    ) throws -> StoredScheduledCall? {
        let candidates = try connection.query(
            """
            SELECT \(Self.columns) FROM scheduled_calls
            WHERE group_id = ?1 AND call_id IS NULL AND cancelled_at IS NULL AND starts_at_ms BETWEEN ?2 AND ?3
            ORDER BY starts_at_ms, id
            """,
            [.text(groupID), .integer(earliestMS), .integer(latestMS)]
        ).map(Self.row)
        guard var nearest = candidates.min(by: { abs($0.startsAtMS - nowMS) < abs($1.startsAtMS - nowMS) }) else {
            return nil
        }
        try connection.run("UPDATE scheduled_calls SET call_id = ?2 WHERE id = ?1", [.text(nearest.id), .text(callID)])
        nearest.callID = callID
        return nearest
    }

    package func insertPreauthorization(
        tokenHash: [UInt8], scheduledCallID: String, userID: String, expiresAtMS: Int64
    ) throws {
        try connection.run(
            "INSERT INTO call_preauthorizations (token_hash, scheduled_call_id, user_id, expires_at_ms) VALUES (?1, ?2, ?3, ?4)",
            [.blob(tokenHash), .text(scheduledCallID), .text(userID), .integer(expiresAtMS)])
    }

    package func redeem(
        tokenHash: [UInt8], userID: String, callID: String, nowMS: Int64, at timestamp: String
    ) throws -> Bool {
        try connection.run(
            """
            UPDATE call_preauthorizations SET used_at = ?5
            WHERE token_hash = ?1 AND user_id = ?2 AND used_at IS NULL AND expires_at_ms > ?4
              AND scheduled_call_id IN (SELECT id FROM scheduled_calls WHERE call_id = ?3 AND cancelled_at IS NULL)
            """,
            [.blob(tokenHash), .text(userID), .text(callID), .integer(nowMS), .text(timestamp)]) == 1
    }

    package func prunePreauthorizations(expiredBefore beforeMS: Int64) throws -> Int {
        try connection.run("DELETE FROM call_preauthorizations WHERE expires_at_ms < ?1", [.integer(beforeMS)])
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
