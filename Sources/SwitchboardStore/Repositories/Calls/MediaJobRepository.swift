import Foundation
import SwitchboardCore

/// A media withdrawal to carry out (remove a participant from a room, or delete the room),
/// written in the transaction of the change that calls for it and retried until the media
/// backend confirms it. Times are milliseconds since 1970.
package struct MediaJob: Sendable, Equatable {
    package var id: String
    package var callID: String
    package var action: MediaAction
    package var attempts: Int
    package var nextAttemptMS: Int64
    package var createdAtMS: Int64
    package var lastError: String?

    package init(
        id: String, callID: String, action: MediaAction, attempts: Int, nextAttemptMS: Int64, createdAtMS: Int64,
        lastError: String? = nil
    ) {
        self.id = id
        self.callID = callID
        self.action = action
        self.attempts = attempts
        self.nextAttemptMS = nextAttemptMS
        self.createdAtMS = createdAtMS
        self.lastError = lastError
    }
}

/// The media withdrawal jobs (table `media_jobs`).
package protocol MediaJobRepository {
    /// Writes a job due at once.
    func enqueue(id: String, callID: String, action: MediaAction, at nowMS: Int64) throws
    /// Jobs due at `nowMS`, oldest first, at most `limit`.
    func due(at nowMS: Int64, limit: Int) throws -> [MediaJob]
    /// Takes a due job for this pass: pushes its next attempt to `untilMS` (a lease other
    /// passes and instances respect). False when another took it first.
    func claim(_ id: String, until untilMS: Int64, at nowMS: Int64) throws -> Bool
    /// The backend confirmed it: the job is done and goes.
    func finish(_ id: String) throws
    /// It failed: tried again at `nextMS`, the error kept for the operator.
    func retry(_ id: String, at nextMS: Int64, error: String) throws
    /// How many wait.
    func pendingCount() throws -> Int
}

/// ``MediaJobRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLMediaJobRepository: MediaJobRepository {
    package let connection: any SQLExecutor

    package func enqueue(id: String, callID: String, action: MediaAction, at nowMS: Int64) throws {
        let (kind, room, identity): (String, String, String?) =
            switch action {
            case .deleteRoom(let room): ("delete_room", room, nil)
            case .removeParticipant(let room, let identity): ("remove_participant", room, identity)
            }
        try connection.run(
            """
            INSERT INTO media_jobs (id, call_id, action, room, identity, attempts, next_attempt_ms, created_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?6)
            """,
            [.text(id), .text(callID), .text(kind), .text(room), identity.map { .text($0) } ?? .null, .integer(nowMS)])
    }

    package func due(at nowMS: Int64, limit: Int) throws -> [MediaJob] {
        try connection.query(
            """
            SELECT id, call_id, action, room, identity, attempts, next_attempt_ms, created_at_ms, last_error
            FROM media_jobs WHERE next_attempt_ms <= ?1 ORDER BY next_attempt_ms, created_at_ms, id LIMIT ?2
            """,
            [.integer(nowMS), .integer(Int64(limit))]
        ).compactMap { row in
            let room = try row.string("room")
            let action: MediaAction
            switch try row.string("action") {
            case "delete_room": action = .deleteRoom(room)
            case "remove_participant": action = .removeParticipant(room: room, identity: try row.string("identity"))
            default: return nil
            }
            return MediaJob(
                id: try row.string("id"), callID: try row.string("call_id"), action: action,
                attempts: try row.int("attempts"),
                nextAttemptMS: try row.int64("next_attempt_ms"), createdAtMS: try row.int64("created_at_ms"),
                lastError: try row.optionalString("last_error"))
        }
    }

    package func claim(_ id: String, until untilMS: Int64, at nowMS: Int64) throws -> Bool {
        try connection.run(
            "UPDATE media_jobs SET next_attempt_ms = ?1 WHERE id = ?2 AND next_attempt_ms <= ?3",
            [.integer(untilMS), .text(id), .integer(nowMS)]) == 1
    }

    package func finish(_ id: String) throws {
        try connection.run("DELETE FROM media_jobs WHERE id = ?", [.text(id)])
    }

    package func retry(_ id: String, at nextMS: Int64, error: String) throws {
        try connection.run(
            "UPDATE media_jobs SET attempts = attempts + 1, next_attempt_ms = ?1, last_error = ?2 WHERE id = ?3",
            [.integer(nextMS), .text(String(error.prefix(500))), .text(id)])
    }

    package func pendingCount() throws -> Int {
        try connection.query("SELECT COUNT(*) AS n FROM media_jobs", []).first?.int("n") ?? 0
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
