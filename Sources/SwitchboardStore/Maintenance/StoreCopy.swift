import Foundation

/// `switchboard copy-to-postgres`: copies an embedded SQLite database, whole, into an empty
/// PostgreSQL one, so a team moves up without losing data. Both are first brought to this
/// build's schema (the same version on both). Every row keeps its ids, event ids and message
/// order included, so clients' cursors stay valid; PostgreSQL's sequences then continue after
/// the largest copied id. It all runs in one PostgreSQL transaction: a failure copies nothing,
/// and the target must hold no user (a second run is refused instead of doubling rows).
package enum StoreCopy {
    /// Tables in an order that satisfies their foreign keys, each with the SQLite expression
    /// that orders its rows (and pages through them), and the identity column PostgreSQL
    /// generates for it, if any (copied with `OVERRIDING SYSTEM VALUE`).
    package struct Table: Sendable {
        package let name: String
        package let key: String
        package let identity: String?
        /// SQLite's `rowid` goes to PostgreSQL's `seq` (the insertion order the SQLite schema keeps).
        package var rowidAsSeq = false
        /// An SQLite query for the largest id ever given out, beyond the rows still there: an
        /// `AUTOINCREMENT` sequence, and event ids retention deleted but clients' cursors hold.
        package var issuedThrough: String?

        package init(
            name: String, key: String, identity: String? = nil, rowidAsSeq: Bool = false, issuedThrough: String? = nil
        ) {
            self.name = name
            self.key = key
            self.identity = identity
            self.rowidAsSeq = rowidAsSeq
            self.issuedThrough = issuedThrough
        }
    }

    package static let tables: [Table] = [
        Table(name: "server_state", key: "rowid", identity: nil),
        Table(name: "users", key: "rowid", identity: nil),
        Table(name: "sessions", key: "rowid", identity: nil),
        Table(name: "friend_requests", key: "rowid", identity: nil),
        Table(name: "conversations", key: "rowid", identity: nil),
        Table(name: "friendships", key: "user_a, user_b", identity: nil),
        Table(name: "blocks", key: "blocker, blocked", identity: nil),
        Table(name: "groups", key: "rowid", identity: nil),
        Table(name: "group_members", key: "group_id, user_id", identity: nil),
        Table(
            name: "messages", key: "seq", identity: "seq",
            issuedThrough: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0) AS n"),
        Table(name: "read_markers", key: "scope_id, user_id", identity: nil),
        Table(
            name: "events", key: "id", identity: "id",
            issuedThrough: """
                SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
                           coalesce((SELECT max(events_pruned_through) FROM users), 0)) AS n
                """),
        Table(name: "calls", key: "rowid", identity: nil),
        Table(name: "call_invitations", key: "rowid", identity: "seq", rowidAsSeq: true),
        Table(name: "call_participants", key: "rowid", identity: "seq", rowidAsSeq: true),
        Table(name: "call_occupants", key: "user_id", identity: nil),
        Table(name: "push_devices", key: "rowid", identity: nil),
        Table(name: "push_jobs", key: "rowid", identity: nil),
        Table(name: "rate_counters", key: "rowid", identity: nil),
        Table(name: "gateway_apps", key: "rowid", identity: nil),
        Table(name: "gateway_app_keys", key: "rowid", identity: nil),
        Table(name: "gateway_replays", key: "rowid", identity: nil),
        Table(name: "gateway_devices", key: "rowid", identity: nil),
        Table(name: "gateway_signals", key: "rowid", identity: nil),
        Table(name: "gateway_signal_callees", key: "rowid", identity: nil),
        Table(
            name: "outbox_jobs", key: "seq", identity: "seq",
            issuedThrough: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'outbox_jobs'), 0) AS n"),
        Table(name: "outbox_attempts", key: "rowid", identity: nil),
        Table(name: "webhook_endpoints", key: "rowid", identity: nil),
        Table(name: "live_locations", key: "scope_id, user_id", identity: nil),
        Table(name: "e2ee_devices", key: "rowid", identity: nil),
        Table(name: "e2ee_items", key: "device_id, sequence", identity: nil),
        Table(name: "e2ee_acks", key: "device_id, scope_id", identity: nil),
        Table(name: "e2ee_sends", key: "sender_user_id, client_id", identity: nil),
        Table(name: "organizations", key: "rowid", identity: nil),
        Table(name: "organization_members", key: "organization_id, user_id", identity: nil),
        Table(name: "call_directory_sources", key: "owner_id, kind, number, owner_kind", identity: nil),
        Table(name: "call_directory_entries", key: "user_id, kind, number", identity: nil),
        Table(name: "call_directory_versions", key: "rowid", identity: nil),
        Table(name: "call_directory_changes", key: "user_id, version, seq", identity: nil),
        Table(name: "scheduled_calls", key: "rowid", identity: nil),
        Table(name: "call_preauthorizations", key: "token_hash", identity: nil),
        Table(name: "relay_presence", key: "room, instance", identity: nil),
    ]

    /// Rows read from SQLite at a time.
    package static let pageSize = 1_000

    /// Copies the SQLite database at `sqlitePath` into the PostgreSQL database at `postgresURL`;
    /// returns the rows copied per table, in copy order. Throws ``StoreError`` (or
    /// ``PostgresError`` from the connection) with the reason; nothing is copied then.
    package static func copy(sqlitePath: String, postgresURL: String) throws -> [(table: String, rows: Int)] {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw StoreError(code: .io, message: "no SQLite database at \(sqlitePath)")
        }
        // Both at this build's schema: SQLite by its migrations, PostgreSQL by its own.
        // It only reads: a server may hold the database (its lock is not taken here).
        var readOnly = DatabaseConfiguration(path: sqlitePath)
        readOnly.exclusive = false
        let sqlite = try Database(configuration: readOnly, migrations: Schema.migrations)
        sqlite.close()
        let postgres = try PostgresDatabase(url: postgresURL, migrations: PostgresSchema.migrations, readerCount: 1)
        postgres.close()

        let source = try SQLiteConnection.open(path: sqlitePath, readOnly: true)
        defer { source.close() }
        let target = try PostgresConnection(url: postgresURL)
        defer { target.close() }
        let executor = PostgresExecutor(connection: target)
        return try target.transaction(.serializable) { _ in
            // Running instances on the target wait for the copy (their writes take the same lock).
            _ = try executor.query("SELECT pg_advisory_xact_lock(?)", [.integer(PostgresDatabase.writeLockKey)])
            let users = try executor.query("SELECT count(*) AS n FROM users", []).first?.int64("n") ?? 0
            guard users == 0 else {
                throw StoreError(
                    code: .misuse,
                    message: "the PostgreSQL database already holds \(users) user(s): copy into an empty one")
            }
            // The migration's own row (created_at) is replaced by the one being copied.
            try executor.run("DELETE FROM server_state", [])
            // One snapshot of the source, however long the copy takes.
            try source.execute("BEGIN")
            defer { try? source.execute("COMMIT") }
            var copied: [(table: String, rows: Int)] = []
            for table in tables {
                copied.append((table.name, try copy(table, from: source, to: executor)))
            }
            return copied
        }
    }

    private static func copy(_ table: Table, from source: SQLiteConnection, to target: PostgresExecutor) throws -> Int {
        let columns = try source.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table.name)]).map {
            try $0.string("name")
        }
        guard !columns.isEmpty else {
            throw StoreError(code: .sql, message: "the SQLite database has no table \(table.name)")
        }
        let single = !table.key.contains(",")
        let inserted = columns + (table.rowidAsSeq ? ["seq"] : [])
        // A single-column key pages by its value (each page is an index seek); a composite key
        // (small tables) by offset.
        let selected =
            columns.map { "\"\($0)\"" } + (table.rowidAsSeq ? ["rowid AS seq"] : [])
            + (single ? ["\(table.key) AS copy_key"] : [])
        let placeholders = Array(repeating: "?", count: inserted.count).joined(separator: ", ")
        let overriding = table.identity == nil ? "" : " OVERRIDING SYSTEM VALUE"
        let insert =
            "INSERT INTO \(table.name) (\(inserted.joined(separator: ", ")))\(overriding) VALUES (\(placeholders))"
        var count = 0
        var after: SQLiteValue?
        while true {
            let page: [SQLiteRow]
            if single {
                let from = after.map { _ in " WHERE \(table.key) > ?" } ?? ""
                page = try source.query(
                    "SELECT \(selected.joined(separator: ", ")) FROM \(table.name)\(from) ORDER BY \(table.key) LIMIT ?",
                    (after.map { [$0] } ?? []) + [.integer(Int64(pageSize))])
            } else {
                page = try source.query(
                    "SELECT \(selected.joined(separator: ", ")) FROM \(table.name) ORDER BY \(table.key) LIMIT ? OFFSET ?",
                    [.integer(Int64(pageSize)), .integer(Int64(count))])
            }
            for row in page { try target.run(insert, Array(row.values.prefix(inserted.count))) }
            if single, let last = page.last { after = try last.value("copy_key") }
            count += page.count
            if page.count < pageSize { break }
        }
        if let identity = table.identity {
            // The sequence continues after the largest id ever given out: the copied rows', and
            // for events those retention deleted (a cursor may be past every row left).
            let issued = try table.issuedThrough.map { try source.query($0, []).first?.int64("n") ?? 0 } ?? 0
            _ = try target.query(
                "SELECT setval(pg_get_serial_sequence(?, ?), greatest(coalesce((SELECT max(\(identity)) FROM \(table.name)), 0), ?) + 1, false)",
                [.text(table.name), .text(identity), .integer(issued)])
        }
        return count
    }
}
