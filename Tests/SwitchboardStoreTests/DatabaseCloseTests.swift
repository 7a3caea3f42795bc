import Dispatch
import SwitchboardStore
import Testing
import SwitchboardTesting

@Suite("Closing a database", .timeLimit(.minutes(3)))
struct DatabaseCloseTests {
    @Test("after close, read and write throw .closed; closing twice is fine")
    func closedCallsThrow() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite")))
            try await database.write { try $0.execute("CREATE TABLE t (id INTEGER)") }
            database.close()
            database.close()
            #expect(database.isClosed)
            let writeError = try await #require(throws: StoreError.self) {
                try await database.write { try $0.run("INSERT INTO t VALUES (1)") }
            }
            #expect(writeError.code == .closed)
            let readError = try await #require(throws: StoreError.self) {
                try await database.read { try $0.query("SELECT * FROM t") }
            }
            #expect(readError.code == .closed)
        }
    }

    @Test("close waits for the write in progress, and it is on disk after reopening")
    func queuedWritesFinish() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("db.sqlite")
            let migrations = [Migration(version: 1, name: "t", sql: "CREATE TABLE t (id INTEGER)")]
            let database = try Database(configuration: DatabaseConfiguration(path: path), migrations: migrations)
            let inside = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let blocked = Task {
                try await database.write { connection in
                    inside.signal()
                    _ = gate.wait(timeout: .now() + generousWait)
                    try connection.run("INSERT INTO t VALUES (1)")
                }
            }
            // The write was handed over (its body runs) before close is called; a fixed sleep
            // here would let a slow machine close first and refuse the write instead.
            #expect(await wait(for: inside))
            // Released from another thread while close() waits for it.
            DispatchQueue(label: "switchboard.store.tests.release").asyncAfter(deadline: .now() + 0.05) {
                gate.signal()
            }
            database.close()
            try await value(of: blocked)
            let reopened = try Database(configuration: DatabaseConfiguration(path: path), migrations: migrations)
            defer { reopened.close() }
            #expect(try await reopened.read { try scalar($0, "SELECT count(*) FROM t") } == 1)
        }
    }

    @Test("a read waiting for a reader fails with .closed when the database closes")
    func waiterFailsOnClose() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(
                configuration: DatabaseConfiguration(path: directory.file("db.sqlite"), readerCount: 1))
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let held = Task {
                try await database.read { _ in
                    holding.signal()
                    _ = release.wait(timeout: .now() + generousWait)
                }
            }
            #expect(await wait(for: holding))
            let waiting = Task { try await database.read { _ in 1 } }
            try await Task.sleep(for: .milliseconds(20))
            database.close()
            let error = try await #require(throws: StoreError.self) { try await value(of: waiting) }
            #expect(error.code == .closed)
            release.signal()
            try await value(of: held)
        }
    }

    @Test("close called from inside a write body does not deadlock")
    func closeInsideWrite() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite")))
            try await database.write { _ in database.close() }
            #expect(database.isClosed)
            await #expect(throws: StoreError.self) { try await database.write { _ in } }
        }
    }
}
