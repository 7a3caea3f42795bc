import Foundation
import Synchronization
import Testing
@testable import SwitchboardStore
import SwitchboardTesting

/// SQLite-style parameters as PostgreSQL's, without a server.
@Suite("PostgreSQL executor: parameters", .timeLimit(.minutes(1)))
struct PostgresParameterTests {
    @Test func bareAndNumberedParametersNumberAsSQLiteDoes() {
        #expect(PostgresExecutor.dollarParameters("a = ? AND b = ?") == "a = $1 AND b = $2")
        #expect(PostgresExecutor.dollarParameters("a = ?1 OR b = ?1 OR c = ?2") == "a = $1 OR b = $1 OR c = $2")
        // A bare ? is one more than the largest so far: ?, ?, ?2, ? is 1, 2, 2, 3.
        #expect(
            PostgresExecutor.dollarParameters("x = ?, y = ?, z = ?2 WHERE id = ?")
                == "x = $1, y = $2, z = $2 WHERE id = $3")
        #expect(PostgresExecutor.dollarParameters("VALUES (?1, ?12, ?)") == "VALUES ($1, $12, $13)")
    }

    @Test func questionMarksInLiteralsAndQuotedNamesStay() {
        #expect(
            PostgresExecutor.dollarParameters("SELECT '?', 'it''s ?' FROM \"t?\" WHERE a = ?")
                == "SELECT '?', 'it''s ?' FROM \"t?\" WHERE a = $1")
        #expect(PostgresExecutor.dollarParameters("SELECT 1") == "SELECT 1")
    }

    @Test func connectionStringsAreShownWithoutTheirPassword() {
        #expect(
            PostgresURL.redacted("postgresql://app:hunter2@db.internal:5432/switchboard")
                == "postgresql://app:***@db.internal:5432/switchboard")
        #expect(
            PostgresURL.redacted("postgresql://app@db/sb?password=hunter2&sslmode=require")
                == "postgresql://app@db/sb?password=***&sslmode=require")
        #expect(
            PostgresURL.redacted("host=db user=app password='hun ter2' dbname=sb")
                == "host=db user=app password=*** dbname=sb")
        #expect(PostgresURL.redacted("host=db password=hunter2") == "host=db password=***")
        #expect(
            PostgresURL.redacted("postgresql:///postgres?host=/tmp/x&port=5")
                == "postgresql:///postgres?host=/tmp/x&port=5")
    }
}

/// A fresh database on the test cluster per test, dropped afterwards.
struct ScratchPostgres {
    let url: String
    private let name: String
    private let adminURL: String

    init() throws {
        guard let adminURL = PostgresTestDatabase.url else {
            throw PostgresError(message: "SWITCHBOARD_TEST_POSTGRES_URL is not set: run the tests through make test")
        }
        self.adminURL = adminURL
        name = "sb_store_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let admin = try PostgresConnection(url: adminURL)
        defer { admin.close() }
        try admin.executeScript("CREATE DATABASE \(name)")
        url =
            adminURL.contains("/postgres?")
            ? adminURL.replacingOccurrences(of: "/postgres?", with: "/\(name)?") : adminURL + "&dbname=\(name)"
    }

    /// Ends every session of the database's but `except` (a backend pid), as a failover would.
    func terminateSessions(except pid: Int64? = nil) throws {
        let admin = try PostgresConnection(url: adminURL)
        defer { admin.close() }
        try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> $2",
            [.text(name), .integer(pid ?? 0)])
    }

    func drop() {
        guard let admin = try? PostgresConnection(url: adminURL) else { return }
        try? admin.executeScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        admin.close()
    }
}

/// The server's PostgreSQL store against a real server: the one write lock across instances,
/// retries, reconnects, and errors in the shape SQLite's have.
@Suite("PostgreSQL database", .timeLimit(.minutes(2)), .enabled(if: PostgresTestDatabase.available))
struct PostgresDatabaseTests {
    static let schema = [
        Migration(
            version: 1, name: "counter",
            sql: """
                CREATE TABLE counter (id int4 PRIMARY KEY, n int8 NOT NULL, CHECK (n >= 0));
                INSERT INTO counter VALUES (1, 0);
                CREATE TABLE item (id text PRIMARY KEY, counter_id int4 REFERENCES counter(id), label text NOT NULL, raw bytea, ratio float8);
                """)
    ]

    /// Two instances (two databases objects, each its own writer) increment one counter by
    /// reading it and writing it back: with no lock, READ COMMITTED would lose updates; the
    /// one write lock makes every increment count.
    @Test func writesOfTwoInstancesCommitOneAtATime() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let a = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        let b = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer {
            a.close()
            b.close()
        }
        #expect(a.migratedVersion == 1 && b.migratedVersion == 1)
        let rounds = 40
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in [a, b] {
                for _ in 0..<rounds {
                    group.addTask {
                        try await database.write { executor in
                            let n = try executor.query("SELECT n FROM counter WHERE id = 1", []).first?.int64("n") ?? -1
                            try executor.run("UPDATE counter SET n = ? WHERE id = 1", [.integer(n + 1)])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let n = try await a.read { try $0.query("SELECT n FROM counter WHERE id = 1", []).first?.int64("n") }
        #expect(n == Int64(2 * rounds))
    }

    @Test func aThrowingBodyRollsBackAndRunsOnceAndALostRaceRunsAgain() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer { database.close() }
        struct Refused: Error {}
        let runs = Mutex(0)
        await #expect(throws: Refused.self) {
            try await database.write { executor in
                runs.withLock { $0 += 1 }
                try executor.run("UPDATE counter SET n = 5 WHERE id = 1", [])
                throw Refused()
            }
        }
        #expect(runs.withLock { $0 } == 1, "an error of the body's own is not retried")
        // The first attempt loses (as a deadlock or serialization failure would); the second commits.
        runs.withLock { $0 = 0 }
        let committed = Mutex<[String]>([])
        try await database.write(
            { executor in
                let attempt = runs.withLock { count in
                    count += 1
                    return count
                }
                try executor.run("UPDATE counter SET n = n + 1 WHERE id = 1", [])
                if attempt == 1 { throw StoreError(code: .busy, message: "lost to a concurrent transaction") }
                return "attempt \(attempt)"
            }, afterCommit: { value in committed.withLock { $0.append(value) } })
        #expect(runs.withLock { $0 } == 2 && committed.withLock { $0 } == ["attempt 2"])
        let n = try await database.read { try $0.query("SELECT n FROM counter WHERE id = 1", []).first?.int64("n") }
        #expect(n == 1, "the rolled-back update and the lost attempt left nothing")
    }

    @Test func valuesAndErrorsLookAsSQLitesDo() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer { database.close() }
        let raw: [UInt8] = [0, 0xff, 7]
        try await database.write { executor in
            try executor.run(
                "INSERT INTO item VALUES (?, 1, ?, ?, ?)", [.text("a"), .text("it's ?"), .blob(raw), .real(0.25)])
        }
        let row = try await database.read { executor in
            try executor.query(
                "SELECT id, label, raw, ratio, counter_id, id = 'a' AS matches, NULL AS nothing, count(*) OVER () AS total FROM item",
                [])
        }.first
        #expect(try row?.string("label") == "it's ?" && row?.blob("raw") == raw && row?.double("ratio") == 0.25)
        #expect(try row?.int64("counter_id") == 1 && row?.int64("matches") == 1 && row?.int64("total") == 1)
        #expect(row?["nothing"] == .null)

        func failure(_ sql: String, _ bindings: [SQLiteValue]) async -> StoreError? {
            do {
                try await database.write { try $0.run(sql, bindings) }
                return nil
            } catch {
                return error as? StoreError
            }
        }
        let duplicate = await failure("INSERT INTO item VALUES ('a', 1, 'x', NULL, NULL)", [])
        #expect(duplicate?.constraint == .unique && duplicate?.isUniqueViolation(naming: "item_pkey") == true)
        #expect(await failure("INSERT INTO item VALUES ('b', 9, 'x', NULL, NULL)", [])?.constraint == .foreignKey)
        #expect(await failure("INSERT INTO item VALUES ('c', 1, NULL, NULL, NULL)", [])?.constraint == .notNull)
        #expect(await failure("UPDATE counter SET n = -1", [])?.constraint == .check)
        #expect(await failure("SELEKT", [])?.code == .sql)
        #expect(
            await failure("INSERT INTO item VALUES ('d', ?, 'x', NULL, NULL)", [.text("not a number")])?.code
                == .typeMismatch)
        let reads = try await database.read { try $0.query("SELECT count(*) AS n FROM item", []).first?.int64("n") }
        #expect(reads == 1)
        await #expect(throws: StoreError.self) { try await database.read { try $0.run("DELETE FROM item", []) } }
    }

    /// The server ends the store's sessions (a failover, an admin): the next write and read
    /// reconnect and succeed.
    @Test func aLostConnectionIsReconnectedForTheNextWriteAndRead() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer { database.close() }
        let before = try await database.write { try $0.query("SELECT pg_backend_pid() AS pid", []).first?.int64("pid") }
        try scratch.terminateSessions()
        let after = try await database.write { executor in
            try executor.run("UPDATE counter SET n = n + 1 WHERE id = 1", [])
            return try executor.query("SELECT pg_backend_pid() AS pid", []).first?.int64("pid")
        }
        #expect(before != nil && after != nil && before != after, "a new session")
        let n = try await database.read { try $0.query("SELECT n FROM counter WHERE id = 1", []).first?.int64("n") }
        #expect(n == 1)
    }

    /// Another instance migrates (adds a column) under statements this one prepared: the
    /// next read and write prepare them again instead of failing until a restart.
    @Test func statementsPreparedBeforeAnotherInstancesMigrationStillRun() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer { database.close() }
        let select = "SELECT * FROM counter"
        #expect(try await database.read { try $0.query(select, []).first?.columnNames } == ["id", "n"])
        _ = try await database.write { try $0.query(select, []) }
        let other = try PostgresConnection(url: scratch.url)
        try other.execute("ALTER TABLE counter ADD COLUMN note text")
        other.close()
        #expect(try await database.read { try $0.query(select, []).first?.columnNames } == ["id", "n", "note"])
        #expect(try await database.write { try $0.query(select, []).first?.columnNames } == ["id", "n", "note"])
    }

    /// A body that swallows a failed statement leaves an aborted transaction, which
    /// PostgreSQL's COMMIT rolls back: that is an error, not a commit (no afterCommit).
    @Test func aTransactionThatFailedInsideIsNotTakenForACommit() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: Self.schema, readerCount: 1)
        defer { database.close() }
        let delivered = Mutex(false)
        await #expect(throws: StoreError.self) {
            try await database.write(
                { executor in
                    try executor.run("UPDATE counter SET n = 7 WHERE id = 1", [])
                    _ = try? executor.run("UPDATE counter SET n = -1 WHERE id = 1", [])  // the CHECK fails; the error is dropped
                    return 1
                }, afterCommit: { _ in delivered.withLock { $0 = true } })
        }
        #expect(!delivered.withLock { $0 })
        #expect(try await database.read { try $0.query("SELECT n FROM counter", []).first?.int64("n") } == 0)
        try await database.write { try $0.run("UPDATE counter SET n = 1", []) }
        #expect(
            try await database.read { try $0.query("SELECT n FROM counter", []).first?.int64("n") } == 1,
            "the connection goes on")
    }

    @Test func anUnreachableServerIsAnIOErrorWithoutThePassword() {
        do {
            _ = try PostgresDatabase(
                url: "postgresql://app:hunter2-secret@127.0.0.1:1/nothing?connect_timeout=2", migrations: [])
            Issue.record("opened a database on nothing")
        } catch let error as StoreError {
            #expect(error.code == .io && !error.description.contains("hunter2"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

/// LISTEN on a connection of its own: notices arrive in commit order, and a dropped
/// connection comes back and says so (`onListening` again).
@Suite("PostgreSQL listener", .timeLimit(.minutes(2)), .enabled(if: PostgresTestDatabase.available))
struct PostgresListenerTests {
    @Test func noticesArriveInCommitOrderAndTheListenerComesBackAfterALostConnection() async throws {
        let scratch = try ScratchPostgres()
        defer { scratch.drop() }
        let database = try PostgresDatabase(url: scratch.url, migrations: [], readerCount: 1)
        defer { database.close() }
        let received = Mutex<[String]>([])
        let listenings = Mutex(0)
        let listener = try database.postgresListener(
            channel: "test_notices", onNotice: { payload in received.withLock { $0.append(payload) } },
            onListening: { listenings.withLock { $0 += 1 } })
        let running = Task { await listener.run() }
        defer { running.cancel() }
        #expect(await eventually { listenings.withLock { $0 } == 1 })
        for n in 1...3 {
            try await database.write { try $0.query("SELECT pg_notify('test_notices', ?)", [.text("n\(n)")]) }
        }
        // A rolled-back transaction's notice is never sent.
        struct Abandon: Error {}
        await #expect(throws: Abandon.self) {
            try await database.write { executor in
                _ = try executor.query("SELECT pg_notify('test_notices', 'rolled back')", [])
                throw Abandon()
            }
        }
        #expect(await eventually { received.withLock { $0.count } == 3 })
        #expect(received.withLock { $0 } == ["n1", "n2", "n3"])

        let writerPID = try await database.write {
            try $0.query("SELECT pg_backend_pid() AS pid", []).first?.int64("pid")
        }
        try scratch.terminateSessions(except: writerPID)
        #expect(await eventually { listenings.withLock { $0 } == 2 }, "reconnected and listening again")
        #expect(listener.listenCount == 2)
        try await database.write { try $0.query("SELECT pg_notify('test_notices', 'after')", []) }
        #expect(await eventually { received.withLock { $0.last } == "after" })
        running.cancel()
        _ = await running.value
        #expect(throws: StoreError.self) {
            try PostgresListener(url: scratch.url, channel: "Bad; DROP", onNotice: { _ in })
        }
    }
}

@Suite("PostgreSQL connection strings: passwords", .timeLimit(.minutes(1)))
struct PostgresPasswordTests {
    @Test func passwordsAreFoundAndScrubbedInEveryForm() {
        #expect(PostgresURL.redacted("host=db password = hunter2 dbname=sb") == "host=db password = *** dbname=sb")
        #expect(PostgresURL.passwords(in: "postgresql://app:s3cr%40t@db/sb") == ["s3cr%40t"])
        #expect(PostgresURL.passwords(in: "host=db password='a b' user=x password=c") == ["a b", "c"])
        #expect(
            PostgresURL.scrub(#"invalid connection option "hunter2""#, of: "host=db password=hunter2")
                == #"invalid connection option "***""#)
        #expect(PostgresURL.scrub("no secret here", of: "host=db") == "no secret here")
        // A short password is masked where it stands, not inside other words.
        #expect(
            PostgresURL.scrub(
                #"connection to socket "/var/run/postgresql/.s.PGSQL.5432" failed (password=p)"#,
                of: "host=/var/run/postgresql password=p")
                == #"connection to socket "/var/run/postgresql/.s.PGSQL.5432" failed (password=***)"#)
    }
}
