/// One schema change, applied once per database in ascending ``version`` order.
///
/// Each migration runs in its own `BEGIN IMMEDIATE` transaction together with the row that
/// records it in `schema_migrations`, so it is applied completely or not at all. The SQL must not
/// open or close transactions itself.
/// ```swift
/// let migrations = [
///     Migration(version: 1, name: "create_users", sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"),
///     Migration(version: 2, name: "add_nickname", sql: "ALTER TABLE users ADD COLUMN nickname TEXT;"),
/// ]
/// ```
public struct Migration: Sendable, Hashable {
    /// The schema version this migration brings the database to; unique and at least 1.
    public let version: Int
    /// A short descriptive name, stored with the version.
    public let name: String
    /// One or more SQL statements.
    public let sql: String

    /// Creates a migration.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies migrations on the writer connection at open.
enum MigrationRunner {
    /// What a run found and did.
    struct Outcome {
        /// The highest applied version afterwards (0 for none).
        var version: Int
        /// The migrations this run applied, in order.
        var applied: [Migration]
    }

    static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    /// Brings the database up to the highest known version.
    ///
    /// Refuses (``StoreError/Code/migration``) a database that has a version this build does not
    /// know, or that lacks a known version below its highest one: both mean the schema came from
    /// another line of development, and using it could corrupt data.
    static func migrate(_ connection: SQLiteConnection, migrations: [Migration]) throws -> Outcome {
        try validate(migrations)
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        let applied: Set<Int> = try connection.inTransaction(begin: "BEGIN IMMEDIATE") { connection in
            try connection.execute(createTable)
            return Set(try connection.query("SELECT version FROM schema_migrations").map { try $0.int("version") })
        }
        let current = applied.max() ?? 0
        if let unknown = applied.filter({ known[$0] == nil }).max() {
            let newest = migrations.last?.version ?? 0
            throw StoreError(
                code: .migration,
                message: unknown > newest
                    ? "the database is at schema version \(current), newer than this build knows (\(newest)); refusing to use it"
                    : "the database has migration \(unknown) applied, which this build does not know; refusing to use it"
            )
        }
        if let missing = migrations.first(where: { $0.version < current && !applied.contains($0.version) }) {
            throw StoreError(
                code: .migration,
                message:
                    "migration \(missing.version) '\(missing.name)' is older than the applied version \(current) but was never applied; refusing to apply it out of order"
            )
        }
        var outcome = Outcome(version: current, applied: [])
        for migration in migrations where migration.version > current {
            try apply(migration, on: connection)
            outcome.version = migration.version
            outcome.applied.append(migration)
        }
        return outcome
    }

    private static func apply(_ migration: Migration, on connection: SQLiteConnection) throws {
        do {
            try connection.inTransaction(begin: "BEGIN IMMEDIATE") { connection in
                try connection.execute(migration.sql)
                try connection.run(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    [.integer(Int64(migration.version)), .text(migration.name)])
            }
        } catch let error as StoreError {
            throw StoreError(
                code: .migration,
                message:
                    "migration \(migration.version) '\(migration.name)' failed and was rolled back: \(error.code): \(error.message)",
                sql: error.sql ?? migration.sql, extendedCode: error.extendedCode)
        }
    }

    private static func validate(_ migrations: [Migration]) throws {
        var previous = 0
        for migration in migrations {
            guard migration.version > previous else {
                throw StoreError(
                    code: .migration,
                    message:
                        "migration versions must be unique, at least 1 and ascending; \(migration.version) '\(migration.name)' follows \(previous)"
                )
            }
            previous = migration.version
        }
    }
}
