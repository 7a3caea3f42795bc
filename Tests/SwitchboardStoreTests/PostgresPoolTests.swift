import Foundation
import Testing
@testable import SwitchboardStore

/// The PostgreSQL connection pool against a real server.
@Suite("PostgreSQL connection pool", .timeLimit(.minutes(2)), .enabled(if: PostgresTestDatabase.available))
struct PostgresPoolTests {
    static func url() throws -> String {
        guard let url = PostgresTestDatabase.url else { throw PostgresError(message: "SWITCHBOARD_TEST_POSTGRES_URL is not set") }
        return url
    }

    /// 200 borrowers on 2 connections, most of them waiting at any moment: each gets one, and
    /// a waiter is never passed by (a lost hand-over would leave it waiting for ever, so a
    /// watchdog closes the pool after a generous bound and the test fails instead of hanging).
    @Test func manyBorrowersShareAtMostTheSizeInConnections() async throws {
        let pool = PostgresPool(url: try Self.url(), size: 2)
        defer { pool.close() }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            pool.close()
        }
        defer { watchdog.cancel() }
        let results = await withTaskGroup(of: Int64?.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try? await pool.withConnection { connection in
                        if index % 10 == 0 { try connection.execute("SELECT pg_sleep(0.005)") }
                        return try connection.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid")
                    }
                }
            }
            var results: [Int64?] = []
            for await result in group { results.append(result) }
            return results
        }
        let pids = results.compactMap { $0 }
        #expect(pids.count == 200, "every borrower was served (none left waiting)")
        #expect(Set(pids).count <= 2 && pool.openCount <= 2)
    }

    /// A borrower cancelled while it waits stops waiting, and the slot it would have had goes
    /// to the next one.
    @Test func aCancelledWaiterStopsWaitingAndTheNextOneIsServed() async throws {
        let pool = PostgresPool(url: try Self.url(), size: 1)
        defer { pool.close() }
        let gate = PostgresGate()
        let holder = Task { try await pool.withConnection { _ in gate.wait() } }
        for _ in 0..<3000 where pool.openCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(pool.openCount == 1)
        let waiter = Task { try await pool.withConnection { try $0.execute("SELECT 1").rows.count } }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        gate.open()
        try await holder.value
        #expect(try await pool.withConnection { try $0.execute("SELECT 1 AS one").rows[0].int64("one") } == 1)
        #expect(pool.openCount == 1)
    }

    @Test func aKilledBackendCostsOneFailedCallAndIsReplaced() async throws {
        let pool = PostgresPool(url: try Self.url(), size: 1)
        defer { pool.close() }
        let first = try await pool.withConnection { try $0.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid") }
        let killer = try PostgresTestDatabase.connect()
        defer { killer.close() }
        try killer.execute("SELECT pg_terminate_backend($1)", [.integer(first)])
        // The next call on the killed connection fails (the server is gone from under it)…
        var failed = false
        for _ in 0..<50 where !failed {
            do {
                _ = try await pool.withConnection { try $0.execute("SELECT 1") }
                try await Task.sleep(for: .milliseconds(20))  // the termination is asynchronous
            } catch {
                failed = true
            }
        }
        #expect(failed)
        // …and the one after gets a fresh connection in the same slot.
        let second = try await pool.withConnection { try $0.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid") }
        #expect(second != first && pool.openCount == 1)
    }

    @Test func aPoolThatCannotConnectFailsEveryCallAndAClosedOneRefuses() async throws {
        let nowhere = PostgresPool(url: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", size: 1)
        for _ in 0..<2 {
            await #expect(throws: PostgresError.self) { try await nowhere.withConnection { try $0.execute("SELECT 1") } }
        }
        #expect(nowhere.openCount == 0)
        let pool = PostgresPool(url: try Self.url(), size: 1)
        _ = try await pool.withConnection { try $0.execute("SELECT 1") }
        pool.close()
        #expect(pool.openCount == 0)
        await #expect(throws: PostgresError.self) { try await pool.withConnection { try $0.execute("SELECT 1") } }
    }
}

/// A gate a pool borrower waits at (on the pool's thread) until the test opens it.
final class PostgresGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func wait() { semaphore.wait() }
    func open() { semaphore.signal() }
}
