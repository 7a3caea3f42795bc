import SwitchboardStore
import SwitchboardWire

/// Reads of a user's event feed.
enum EventFeed {
    /// The most events one answer carries.
    static let pageSize = 100

    /// Events of `userID` after `after`, ascending, at most `pageSize`.
    /// Throws 410 `CURSOR_EXPIRED` when retention already deleted events the cursor has not seen.
    static func page(for userID: String, after: Int64, in connection: SQLiteConnection) throws -> [Event] {
        let pruned = try connection.query("SELECT events_pruned_through FROM users WHERE id = ?", [.text(userID)])
        if let row = pruned.first, after < (try row.int64("events_pruned_through")) {
            throw APIError(
                status: 410, code: "CURSOR_EXPIRED",
                message: "events after this cursor were pruned; take a new snapshot and continue from its eventCursor")
        }
        let rows = try connection.query(
            """
            SELECT id, kind, conversation_id, group_id, message_id, call_id, created_at
            FROM events WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?
            """,
            [.text(userID), .integer(after), .integer(Int64(pageSize))])
        return try rows.map { row in
            Event(
                id: try row.int64("id"), kind: try row.string("kind"),
                conversationId: try row.optionalString("conversation_id"), groupId: try row.optionalString("group_id"),
                messageId: try row.optionalString("message_id"), callId: try row.optionalString("call_id"),
                createdAt: try row.string("created_at"))
        }
    }

    /// The cursor a fresh snapshot starts from: the user's newest event id (or the newest one
    /// retention deleted, when all of them are gone).
    static func cursor(for userID: String, in connection: SQLiteConnection) throws -> Int64 {
        let rows = try connection.query(
            """
            SELECT max(coalesce((SELECT max(id) FROM events WHERE user_id = ?1), 0),
                       coalesce((SELECT events_pruned_through FROM users WHERE id = ?1), 0)) AS cursor
            """,
            [.text(userID)])
        return try rows.first?.int64("cursor") ?? 0
    }

    /// Deletes events created before `cutoff` (stored timestamp text) and records, per user,
    /// the newest id deleted. Returns how many events were deleted.
    static func prune(before cutoff: String, in connection: SQLiteConnection) throws -> Int {
        try connection.run(
            """
            UPDATE users SET events_pruned_through = max(events_pruned_through,
                (SELECT max(id) FROM events WHERE events.user_id = users.id AND events.created_at < ?1))
            WHERE id IN (SELECT DISTINCT user_id FROM events WHERE created_at < ?1)
            """,
            [.text(cutoff)])
        return try connection.run("DELETE FROM events WHERE created_at < ?", [.text(cutoff)])
    }
}
