import SwitchboardStore
import Testing

@Suite("Migrations", .timeLimit(.minutes(3)))
struct MigrationTests {
    /// CREATE TABLE without IF NOT EXISTS fails if it is ever run twice.
    static let v1 = Migration(
        version: 1, name: "create_users", sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    static let v2 = Migration(version: 2, name: "add_nickname", sql: "ALTER TABLE users ADD COLUMN nickname TEXT")
    static let v3 = Migration(
        version: 3, name: "create_rooms",
        sql: "CREATE TABLE rooms (id INTEGER PRIMARY KEY); CREATE INDEX users_name ON users (name);")

    static func open(_ directory: TemporaryDirectory, _ migrations: [Migration]) throws -> Database {
        try Database(
            configuration: DatabaseConfiguration(path: directory.file("db.sqlite"), readerCount: 1),
            migrations: migrations)
    }

    static func tables(_ database: Database) async throws -> [String] {
        try await database.read {
            try $0.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map {
                try $0.string("name")
            }
        }
    }

    @Test("migrations are applied once and recorded; reopening does not run them again")
    func appliedOnce() async throws {
        try await withTemporaryDirectory { directory in
            let first = try Self.open(directory, [Self.v1, Self.v2])
            #expect(first.migratedVersion == 2)
            #expect(first.appliedMigrations == [Self.v1, Self.v2])
            let recorded = try await first.read { connection in
                try connection.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").map {
                    (try $0.int("version"), try $0.string("name"), try $0.string("applied_at"))
                }
            }
            #expect(recorded.map(\.0) == [1, 2])
            #expect(recorded.map(\.1) == ["create_users", "add_nickname"])
            #expect(recorded.allSatisfy { !$0.2.isEmpty })
            first.close()

            let second = try Self.open(directory, [Self.v1, Self.v2])
            defer { second.close() }
            #expect(second.migratedVersion == 2)
            #expect(second.appliedMigrations.isEmpty)
        }
    }

    @Test("a migration added later is applied on reopen")
    func laterMigration() async throws {
        try await withTemporaryDirectory { directory in
            let first = try Self.open(directory, [Self.v1])
            try await first.write { try $0.run("INSERT INTO users (name) VALUES ('ada')") }
            first.close()

            let second = try Self.open(directory, [Self.v1, Self.v2, Self.v3])
            defer { second.close() }
            #expect(second.migratedVersion == 3)
            #expect(second.appliedMigrations == [Self.v2, Self.v3])
            #expect(try await Self.tables(second).contains("rooms"))
            let row = try await second.read { try $0.query("SELECT name, nickname FROM users").first }
            #expect(try row?.string("name") == "ada")
            #expect(try row?.optionalString("nickname") == nil)
        }
    }

    @Test("a database at a newer version than the code knows is refused")
    func newerDatabaseRefused() async throws {
        try await withTemporaryDirectory { directory in
            try Self.open(directory, [Self.v1, Self.v2]).close()
            let error = try #require(throws: StoreError.self) { try Self.open(directory, [Self.v1]) }
            #expect(error.code == .migration)
            #expect(error.message.contains("newer"))
            // Nothing was changed: the full build still opens it at version 2.
            let again = try Self.open(directory, [Self.v1, Self.v2])
            #expect(again.migratedVersion == 2)
            again.close()
        }
    }

    @Test("an applied version the code does not know is refused even below the newest known one")
    func unknownAppliedVersionRefused() async throws {
        try await withTemporaryDirectory { directory in
            try Self.open(directory, [Self.v1, Self.v2]).close()
            let error = try #require(throws: StoreError.self) { try Self.open(directory, [Self.v1, Self.v3]) }
            #expect(error.code == .migration)
        }
    }

    @Test("a failing migration leaves the database at the previous version, with none of its changes")
    func failingMigration() async throws {
        try await withTemporaryDirectory { directory in
            let broken = Migration(
                version: 2, name: "broken",
                sql: "CREATE TABLE half_done (id INTEGER); INSERT INTO no_such_table VALUES (1);")
            let error = try #require(throws: StoreError.self) { try Self.open(directory, [Self.v1, broken]) }
            #expect(error.code == .migration)
            #expect(error.message.contains("broken"))
            #expect(error.message.contains("no_such_table"))

            let database = try Self.open(directory, [Self.v1])
            defer { database.close() }
            #expect(database.migratedVersion == 1)
            #expect(database.appliedMigrations.isEmpty)
            let tables = try await Self.tables(database)
            #expect(tables.contains("users"))
            #expect(!tables.contains("half_done"))
            let versions = try await database.read {
                try $0.query("SELECT version FROM schema_migrations").map { try $0.int("version") }
            }
            #expect(versions == [1])
        }
    }

    @Test(
        "migration versions must be unique and ascending",
        arguments: [
            [v1, v1], [v2, v1], [Migration(version: 0, name: "zero", sql: "SELECT 1")],
        ])
    func invalidVersions(migrations: [Migration]) async throws {
        try await withTemporaryDirectory { directory in
            let error = try #require(throws: StoreError.self) { try Self.open(directory, migrations) }
            #expect(error.code == .migration)
        }
    }
}
