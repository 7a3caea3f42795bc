/// Brings a PostgreSQL database to the newest schema version (the same ``Migration`` steps
/// SQLite's ``Database`` takes, in PostgreSQL's dialect), with several instances starting
/// at once: they take turns under an advisory lock, so each migration runs once. Each
/// migration runs in its own transaction with its version row, so a failing one leaves the
/// database at the version before it. A database newer than the newest migration is refused
/// (an older build must not write to it).
public enum PostgresMigrator {
    /// The advisory lock all instances of one database take (any fixed number; "SWBDSCHM").
    public static let defaultLockKey: Int64 = 0x5357_4244_5343_484D

    /// Applies the migrations newer than the database's version, in version order; returns the
    /// version the database is at afterwards. `table` keeps the applied versions. Throws
    /// ``PostgresError``.
    @discardableResult
    public static func migrate(
        _ connection: PostgresConnection, _ migrations: [Migration], table: String = "schema_migrations",
        lockKey: Int64 = defaultLockKey
    ) throws -> Int {
        let ordered = migrations.sorted { $0.version < $1.version }
        guard Set(ordered.map(\.version)).count == ordered.count, ordered.allSatisfy({ $0.version > 0 }) else {
            throw PostgresError(message: "migration versions must be positive and distinct")
        }
        guard table.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }), !table.isEmpty
        else {
            throw PostgresError(
                message: "the migrations table name '\(table)' must be lowercase letters, digits and underscores")
        }
        try connection.execute("SELECT pg_advisory_lock($1)", [.integer(lockKey)])
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [.integer(lockKey)]) }
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS \(table) (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        var current = Int(
            try connection.execute("SELECT coalesce(max(version), 0) AS v FROM \(table)").rows.first?.int64("v") ?? 0)
        let newest = ordered.last?.version ?? 0
        guard current <= newest else {
            throw PostgresError(
                message:
                    "the database schema is at version \(current), newer than this build knows (\(newest)): upgrade the server"
            )
        }
        for migration in ordered where migration.version > current {
            do {
                try connection.transaction { connection in
                    try connection.executeScript(migration.sql)
                    try connection.execute(
                        "INSERT INTO \(table) (version, name) VALUES ($1, $2)",
                        [.integer(Int64(migration.version)), .text(migration.name)])
                }
            } catch let error as PostgresError {
                throw PostgresError(
                    sqlState: error.sqlState,
                    message: "migration \(migration.version) (\(migration.name)) failed: \(error.message)",
                    sql: error.sql)
            } catch {
                throw PostgresError(message: "migration \(migration.version) (\(migration.name)) failed: \(error)")
            }
            current = migration.version
        }
        return current
    }
}
