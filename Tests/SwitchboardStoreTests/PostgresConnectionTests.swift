import Foundation
import Testing
@testable import SwitchboardStore

/// The throw-away cluster `scripts/with-postgres.sh` starts for `make test`.
enum PostgresTestDatabase {
    static var url: String? { ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_POSTGRES_URL"] }
    /// Set by `make test`: the cluster must be there, so a missing one fails instead of skipping.
    static var required: Bool { ProcessInfo.processInfo.environment["SWITCHBOARD_REQUIRE_POSTGRES"] == "1" }
    static var available: Bool { url != nil || required }

    static func connect() throws -> PostgresConnection {
        guard let url else {
            throw PostgresError(message: "SWITCHBOARD_TEST_POSTGRES_URL is not set: run the tests through make test")
        }
        return try PostgresConnection(url: url)
    }
}

/// libpq underneath the PostgreSQL store, against a real server (make test starts one).
@Suite("PostgreSQL connection (libpq)", .timeLimit(.minutes(2)), .enabled(if: PostgresTestDatabase.available))
struct PostgresConnectionTests {
    @Test func valuesRoundTripWithTheirTypesAndNullAndBytesStayExact() throws {
        let connection = try PostgresTestDatabase.connect()
        defer { connection.close() }
        try connection.execute("CREATE TEMP TABLE t (n int8, small int4, s text, b bool, raw bytea, maybe text)")
        let text = "it's \"quoted\"; DROP TABLE t; -- ünïcødé 📞"
        let raw: [UInt8] = [0, 1, 0x7f, 0x80, 0xff, 0]
        let inserted = try connection.execute(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6), ($7, 0, '', false, $8, 'x')",
            [
                .integer(Int64.max), .integer(-7), .text(text), .boolean(true), .bytes(raw), .null, .integer(Int64.min),
                .bytes([]),
            ])
        #expect(inserted.affectedRows == 2 && inserted.rows.isEmpty)
        let rows = try connection.execute("SELECT * FROM t ORDER BY n DESC").rows
        #expect(rows.count == 2)
        #expect(try rows[0].int64("n") == Int64.max && rows[0].int64("small") == -7)
        #expect(try rows[0].string("s") == text && rows[0].bool("b"))
        #expect(rows[0]["raw"] == .bytes(raw) && rows[0]["maybe"] == .null)
        #expect(try rows[0].optionalString("maybe") == nil)
        #expect(try rows[1].int64("n") == Int64.min)
        #expect(rows[1]["raw"] == .bytes([]))
        #expect(try rows[1].optionalString("maybe") == "x")
        #expect(throws: PostgresError.self) { try rows[0].int64("s") }
        #expect(
            try connection.execute("SELECT count(*) AS c FROM t WHERE s = $1", [.text(text)]).rows.first?.int64("c")
                == 1)
    }

    @Test func errorsCarryTheirSQLStateAndTheConnectionGoesOn() throws {
        let connection = try PostgresTestDatabase.connect()
        defer { connection.close() }
        try connection.execute("CREATE TEMP TABLE u (id text PRIMARY KEY)")
        try connection.execute("INSERT INTO u VALUES ($1)", [.text("a")])
        do {
            try connection.execute("INSERT INTO u VALUES ($1)", [.text("a")])
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(
                error.isUniqueViolation && error.sqlState == "23505" && error.sql?.contains("INSERT INTO u") == true)
            #expect(!error.isRetryable)
        }
        do {
            try connection.execute("SELEKT 1")
            Issue.record("bad SQL was accepted")
        } catch {
            #expect(error.sqlState == "42601" && error.message.contains("syntax"))
        }
        #expect(try connection.execute("SELECT 1 AS one").rows.first?.int64("one") == 1, "still usable")
        #expect(connection.isOpen)
    }

    @Test func aTransactionCommitsWhenItReturnsAndRollsBackWhenItThrows() throws {
        let connection = try PostgresTestDatabase.connect()
        defer { connection.close() }
        try connection.execute("CREATE TEMP TABLE v (id int4)")
        _ = try connection.transaction { try $0.execute("INSERT INTO v VALUES (1)") }
        struct Oops: Error {}
        #expect(throws: Oops.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO v VALUES (2)")
                throw Oops()
            }
        }
        #expect(throws: PostgresError.self) {
            try connection.transaction(.serializable) { try $0.execute("INSERT INTO v VALUES ('not a number')") }
        }
        let ids = try connection.execute("SELECT id FROM v ORDER BY id").rows.map { try $0.int64("id") }
        #expect(ids == [1])
    }

    @Test func aConcurrentUpdateIsARetryableSerializationFailure() throws {
        let a = try PostgresTestDatabase.connect(), b = try PostgresTestDatabase.connect()
        defer {
            a.close()
            b.close()
        }
        let table = "w_\(UUID().uuidString.prefix(8).lowercased())"
        try a.execute("CREATE TABLE \(table) (id int4 PRIMARY KEY, n int4)")
        defer { _ = try? a.execute("DROP TABLE \(table)") }
        try a.execute("INSERT INTO \(table) VALUES (1, 0)")
        try a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        _ = try a.execute("SELECT n FROM \(table) WHERE id = 1")
        _ = try b.transaction(.repeatableRead) { try $0.execute("UPDATE \(table) SET n = n + 1 WHERE id = 1") }
        do {
            try a.execute("UPDATE \(table) SET n = n + 1 WHERE id = 1")
            Issue.record("the lost update was allowed")
        } catch {
            #expect(error.isRetryable && error.sqlState == "40001")
        }
        try a.execute("ROLLBACK")
        let n = try a.execute("SELECT n FROM \(table) WHERE id = 1").rows.first?.int64("n")
        #expect(n == 1)
    }

    @Test func aFailedConnectionSaysWhyWithoutThePassword() {
        do {
            _ = try PostgresConnection(url: "postgresql://someone:hunter2-secret@127.0.0.1:1/nothing?connect_timeout=2")
            Issue.record("connected to nothing")
        } catch {
            #expect(error.message.contains("cannot connect") && !error.description.contains("hunter2"))
        }
    }
}
