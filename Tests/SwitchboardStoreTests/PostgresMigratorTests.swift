import Foundation
import Synchronization
import Testing
@testable import SwitchboardStore

/// Migrations on PostgreSQL, with instances starting at once, against a real server.
@Suite("PostgreSQL migrations", .timeLimit(.minutes(2)), .enabled(if: PostgresTestDatabase.available))
struct PostgresMigratorTests {
    /// Names of this test's own: tables, the versions table and the lock key.
    struct Names {
        let tag = UUID().uuidString.prefix(8).lowercased()
        var versions: String { "versions_\(tag)" }
        var lock: Int64 { Int64(bitPattern: UInt64(tag, radix: 16)! | 1) }
        func table(_ name: String) -> String { "\(name)_\(tag)" }

        func migrations(failingAt failing: Int? = nil) -> [Migration] {
            [
                Migration(
                    version: 1, name: "people",
                    sql:
                        "CREATE TABLE \(table("people")) (id text PRIMARY KEY); CREATE INDEX \(table("people_ix")) ON \(table("people")) (id);"
                ),
                Migration(
                    version: 2, name: "age",
                    sql: failing == 2
                        ? "ALTER TABLE \(table("people")) ADD COLUMN age int; SELEKT;"
                        : "ALTER TABLE \(table("people")) ADD COLUMN age int;"),
                Migration(version: 3, name: "pets", sql: "CREATE TABLE \(table("pets")) (id text PRIMARY KEY);"),
            ]
        }

        func drop(_ connection: PostgresConnection) {
            _ = try? connection.executeScript("DROP TABLE IF EXISTS \(table("pets")), \(table("people")), \(versions);")
        }
    }

    @Test func instancesStartingAtOnceApplyEachMigrationOnce() throws {
        let names = Names()
        let setup = try PostgresTestDatabase.connect()
        defer {
            names.drop(setup)
            setup.close()
        }
        let results = Mutex<[Result<Int, any Error>]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let result = Result { () throws -> Int in
                let connection = try PostgresTestDatabase.connect()
                defer { connection.close() }
                return try PostgresMigrator.migrate(
                    connection, names.migrations(), table: names.versions, lockKey: names.lock)
            }
            results.withLock { $0.append(result) }
        }
        let versions = try results.withLock { $0 }.map { try $0.get() }
        #expect(versions == [3, 3, 3, 3], "every instance sees the newest version")
        let applied = try setup.execute("SELECT version, name FROM \(names.versions) ORDER BY version").rows
        #expect(
            try applied.map { "\(try $0.int64("version")) \(try $0.string("name"))" } == [
                "1 people", "2 age", "3 pets",
            ])
        #expect(try setup.execute("SELECT count(*) AS n FROM \(names.table("pets"))").rows.first?.int64("n") == 0)
        // Again: nothing to do.
        #expect(
            try PostgresMigrator.migrate(setup, names.migrations(), table: names.versions, lockKey: names.lock) == 3)
    }

    @Test func aFailingMigrationLeavesTheVersionBeforeItAndNamesItself() throws {
        let names = Names()
        let connection = try PostgresTestDatabase.connect()
        defer {
            names.drop(connection)
            connection.close()
        }
        do {
            try PostgresMigrator.migrate(
                connection, names.migrations(failingAt: 2), table: names.versions, lockKey: names.lock)
            Issue.record("a failing migration was applied")
        } catch let error as PostgresError {
            #expect(error.message.contains("migration 2 (age) failed") && error.sqlState == "42601")
        }
        #expect(try connection.execute("SELECT max(version) AS v FROM \(names.versions)").rows.first?.int64("v") == 1)
        let columns = try connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY column_name",
            [.text(names.table("people"))]
        ).rows
        #expect(try columns.map { try $0.string("column_name") } == ["id"], "its ALTER was rolled back with it")
        // Fixed: it goes on from there.
        #expect(
            try PostgresMigrator.migrate(connection, names.migrations(), table: names.versions, lockKey: names.lock)
                == 3)
    }

    @Test func aDatabaseNewerThanTheBuildIsRefused() throws {
        let names = Names()
        let connection = try PostgresTestDatabase.connect()
        defer {
            names.drop(connection)
            connection.close()
        }
        try PostgresMigrator.migrate(connection, names.migrations(), table: names.versions, lockKey: names.lock)
        do {
            try PostgresMigrator.migrate(
                connection, Array(names.migrations().prefix(2)), table: names.versions, lockKey: names.lock)
            Issue.record("an older build migrated a newer database")
        } catch let error as PostgresError {
            #expect(error.message.contains("version 3, newer than this build knows (2)"))
        }
        #expect(throws: PostgresError.self) {
            try PostgresMigrator.migrate(
                connection, [Migration(version: 1, name: "a", sql: ""), Migration(version: 1, name: "b", sql: "")])
        }
        #expect(throws: PostgresError.self) { try PostgresMigrator.migrate(connection, [], table: "Bad-Name") }
    }
}
