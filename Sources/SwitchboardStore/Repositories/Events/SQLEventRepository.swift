import SwitchboardObservability
import SwitchboardWire

/// ``EventRepository`` in SQL that SQLite and PostgreSQL both run (table `events`, and each user's
/// `events_pruned_through`), working on the connection of one transaction or snapshot.
package struct SQLEventRepository: EventRepository {
    package let connection: any SQLExecutor

    /// Above this many users, `append` writes them with one statement.
    package static let batchThreshold = 16

    /// Many users (a group message to thousands) are written by one statement that reads their
    /// ids from a JSON array (`json_each`) and hands each new row back (`RETURNING`): one
    /// statement instead of one per user, which costs a third of the write.
    package func append(
        _ kind: EventKind, to userIDs: [String], references: EventReferences, at timestamp: String
    ) throws -> [(userID: String, id: Int64)] {
        let values = Self.values(kind, references, timestamp)
        if userIDs.count > Self.batchThreshold {
            var array = "["
            for (index, userID) in userIDs.enumerated() {
                if index > 0 { array += "," }
                JSONText.appendString(userID, to: &array)
            }
            array += "]"
            return try insertReturning(
                "SELECT value, ?, ?, ?, ?, ?, ? FROM \(connection.dialect.jsonTextArray("?")) ORDER BY key",
                values + [.text(array)])
        }
        var written: [(userID: String, id: Int64)] = []
        written.reserveCapacity(userIDs.count)
        for userID in userIDs {
            let rows = try connection.query(
                """
                INSERT INTO events (user_id, kind, conversation_id, group_id, message_id, call_id, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id
                """,
                [.text(userID)] + values)
            written.append((userID, try Self.id(in: rows)))
        }
        return written
    }

    private static func id(in rows: [SQLiteRow]) throws -> Int64 {
        guard let row = rows.first, case .integer(let id) = row[0] else {
            throw StoreError(
                code: .typeMismatch, message: "INSERT INTO events … RETURNING id gave \(rows.first?.values ?? [])")
        }
        return id
    }

    /// One statement that reads the members itself: a message to a group of thousands neither
    /// reads the member list into the process nor binds one insert per member.
    package func append(
        _ kind: EventKind, toMembersOf groupID: String, references: EventReferences, at timestamp: String
    ) throws
        -> [(userID: String, id: Int64)]
    {
        var references = references
        references.groupID = groupID
        return try insertReturning(
            "SELECT user_id, ?, ?, ?, ?, ?, ? FROM group_members WHERE group_id = ? ORDER BY joined_at, user_id",
            Self.values(kind, references, timestamp) + [.text(groupID)])
    }

    package func page(for userID: String, after: Int64, limit: Int) throws -> EventPageResult {
        let pruned = try connection.query("SELECT events_pruned_through FROM users WHERE id = ?", [.text(userID)])
        if let row = pruned.first, after < (try row.int64("events_pruned_through")) { return .cursorExpired }
        let rows = try connection.query(
            """
            SELECT id, kind, conversation_id, group_id, message_id, call_id, created_at
            FROM events WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?
            """,
            [.text(userID), .integer(after), .integer(Int64(limit))])
        return .events(
            try rows.map { row in
                Event(
                    id: try row.int64("id"), kind: EventKind(rawValue: try row.string("kind")),
                    conversationId: try row.optionalString("conversation_id"),
                    groupId: try row.optionalString("group_id"),
                    messageId: try row.optionalString("message_id"), callId: try row.optionalString("call_id"),
                    createdAt: try row.string("created_at"))
            })
    }

    package func newestIDs(of userIDs: [String]) throws -> [String: Int64] {
        guard !userIDs.isEmpty else { return [:] }
        var array = "["
        for (index, userID) in userIDs.enumerated() {
            if index > 0 { array += "," }
            JSONText.appendString(userID, to: &array)
        }
        array += "]"
        return try newestIDs(
            where: "user_id IN (SELECT value FROM \(connection.dialect.jsonTextArray("?")))", [.text(array)])
    }

    package func newestIDs(ofMembersOf groupID: String) throws -> [String: Int64] {
        try newestIDs(where: "user_id IN (SELECT user_id FROM group_members WHERE group_id = ?)", [.text(groupID)])
    }

    private func newestIDs(where condition: String, _ bindings: [SQLiteValue]) throws -> [String: Int64] {
        var newest: [String: Int64] = [:]
        for row in try connection.query(
            "SELECT user_id, max(id) AS id FROM events WHERE \(condition) GROUP BY user_id", bindings)
        {
            newest[try row.string("user_id")] = try row.int64("id")
        }
        return newest
    }

    package func cursor(for userID: String) throws -> Int64 {
        let rows = try connection.query(
            """
            SELECT \(connection.dialect.greatest)(coalesce((SELECT max(id) FROM events WHERE user_id = ?1), 0),
                       coalesce((SELECT events_pruned_through FROM users WHERE id = ?1), 0)) AS cursor
            """,
            [.text(userID)])
        return try rows.first?.int64("cursor") ?? 0
    }

    package func prune(before cutoff: String) throws -> Int {
        try connection.run(
            """
            UPDATE users SET events_pruned_through = \(connection.dialect.greatest)(events_pruned_through,
                (SELECT max(id) FROM events WHERE events.user_id = users.id AND events.created_at < ?1))
            WHERE id IN (SELECT DISTINCT user_id FROM events WHERE created_at < ?1)
            """,
            [.text(cutoff)])
        return try connection.run("DELETE FROM events WHERE created_at < ?", [.text(cutoff)])
    }

    /// kind, conversation, group, message, call, created_at: the columns after `user_id`.
    private static func values(_ kind: EventKind, _ references: EventReferences, _ timestamp: String) -> [SQLiteValue] {
        [
            .text(kind.rawValue), references.conversationID.map(SQLiteValue.text) ?? .null,
            references.groupID.map(SQLiteValue.text) ?? .null,
            references.messageID.map(SQLiteValue.text) ?? .null, references.callID.map(SQLiteValue.text) ?? .null,
            .text(timestamp),
        ]
    }

    /// `INSERT INTO events … <select>` whose select yields (user, kind, conversation, group,
    /// message, call, created_at) rows; the new rows' users and ids in id order (`RETURNING`'s
    /// own order is unspecified).
    private func insertReturning(_ select: String, _ bindings: [SQLiteValue]) throws -> [(userID: String, id: Int64)] {
        // Row by row as SQLite steps the insert: a message to a group of thousands does not
        // first collect thousands of rows.
        var returned: [(userID: String, id: Int64)] = []
        try connection.forEachRow(
            "INSERT INTO events (user_id, kind, conversation_id, group_id, message_id, call_id, created_at) "
                + select + " RETURNING id, user_id", bindings
        ) { row in
            guard case .integer(let id) = row[0], case .text(let userID) = row[1] else {
                throw StoreError(code: .typeMismatch, message: "RETURNING id, user_id gave \(row.values)")
            }
            returned.append((userID, id))
        }
        returned.sort { $0.id < $1.id }
        return returned
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
