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

    @Test func manyBorrowersShareAtMostTheSizeInConnections() async throws {
        let pool = PostgresPool(url: try Self.url(), size: 2)
        defer { pool.close() }
        let pids = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.execute("SELECT pg_sleep(0.01)")
                        return try connection.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid")
                    }
                }
            }
            var pids: [Int64] = []
            for try await pid in group { pids.append(pid) }
            return pids
        }
        #expect(pids.count == 20)
        #expect(Set(pids).count <= 2 && pool.openCount <= 2)
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
