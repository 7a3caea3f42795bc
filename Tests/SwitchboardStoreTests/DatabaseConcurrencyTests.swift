import Dispatch
import Foundation
import SwitchboardStore
import Synchronization
import Testing
import SwitchboardTesting

@Suite("Database concurrency", .timeLimit(.minutes(3)))
struct DatabaseConcurrencyTests {
    @Test("200 concurrent writes all commit without busy errors")
    func concurrentWrites() async throws {
        try await withDatabase(migrations: [
            Migration(version: 1, name: "t", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL UNIQUE)")
        ]) { database, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<200 {
                    group.addTask { _ = try await database.write { try $0.run("INSERT INTO t (n) VALUES (?)", [n]) } }
                }
                try await group.waitForAll()
            }
            #expect(try await database.read { try scalar($0, "SELECT count(*) FROM t") } == 200)
            #expect(try await database.read { try scalar($0, "SELECT sum(n) FROM t") } == Int64(199 * 200 / 2))
        }
    }

    @Test("concurrent readers always see a consistent snapshot while a writer moves value between rows")
    func consistentSnapshots() async throws {
        let schema = Migration(
            version: 1, name: "accounts",
            sql:
                "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); INSERT INTO accounts VALUES (1, 1000), (2, 0);"
        )
        try await withDatabase(readerCount: 3, migrations: [schema]) { database, _ in
            let sums = try await withThrowingTaskGroup(of: [Int64].self) { group in
                group.addTask {
                    for step in 1...300 {
                        try await database.write { connection in
                            let amount = Int64(step % 7 + 1)
                            try connection.run(
                                "UPDATE accounts SET balance = balance - ? WHERE id = 1", [.integer(amount)])
                            try connection.run(
                                "UPDATE accounts SET balance = balance + ? WHERE id = 2", [.integer(amount)])
                        }
                    }
                    return []
                }
                for _ in 0..<3 {
                    group.addTask {
                        var seen: [Int64] = []
                        for _ in 0..<150 {
                            // Two separate statements: only a shared snapshot keeps their sum constant.
                            seen.append(
                                try await database.read { connection in
                                    let first = try scalar(connection, "SELECT balance FROM accounts WHERE id = 1")
                                    let second = try scalar(connection, "SELECT balance FROM accounts WHERE id = 2")
                                    return first + second
                                })
                        }
                        return seen
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            #expect(sums.count == 450)
            #expect(sums.allSatisfy { $0 == 1000 }, "inconsistent sums: \(Set(sums).sorted())")
            #expect(
                try await database.read { try scalar($0, "SELECT balance FROM accounts WHERE id = 2") }
                    == (1...300).reduce(0) { $0 + Int64($1 % 7 + 1) })
        }
    }

    @Test("readers run concurrently with each other")
    func readersOverlap() async throws {
        try await withDatabase(readerCount: 2) { database, _ in
            let firstInside = DispatchSemaphore(value: 0)
            let secondInside = DispatchSemaphore(value: 0)
            // Each read waits inside its body for the other one: this only finishes if both run at once.
            async let first = database.read { _ in
                firstInside.signal()
                return secondInside.wait(timeout: .now() + generousWait) == .success
            }
            async let second = database.read { _ in
                secondInside.signal()
                return firstInside.wait(timeout: .now() + generousWait) == .success
            }
            let results = try await [first, second]
            #expect(results == [true, true])
        }
    }

    @Test("a read runs while a write transaction is open and does not see its uncommitted rows")
    func readDuringWrite() async throws {
        try await withDatabase(migrations: [
            Migration(version: 1, name: "t", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
        ]) { database, _ in
            let writerInside = DispatchSemaphore(value: 0)
            let readDone = DispatchSemaphore(value: 0)
            async let write: Bool = database.write { connection in
                try connection.run("INSERT INTO t (id) VALUES (1)")
                writerInside.signal()
                return readDone.wait(timeout: .now() + generousWait) == .success
            }
            #expect(await wait(for: writerInside))
            let countDuringWrite = try await database.read { try scalar($0, "SELECT count(*) FROM t") }
            readDone.signal()
            #expect(countDuringWrite == 0)
            #expect(try await write)
            #expect(try await database.read { try scalar($0, "SELECT count(*) FROM t") } == 1)
        }
    }

    /// `readsOnCallerThread`: the body runs on the thread that asked (no hop to the reader's
    /// queue and back), and the pool still bounds how many run at once.
    @Test("reads on the caller's thread skip the readers' queues and still wait for a free reader")
    func readsOnTheCallersThread() async throws {
        try await withDatabase(readerCount: 2, readsOnCallerThread: true, migrations: []) { database, _ in
            // Nothing suspends between the body and the return, so the task is still on the
            // thread the body ran on (with the readers' queues it would be a queue's thread).
            let inside = try await database.read { _ in UInt(pthread_self()) }
            #expect(inside == UInt(pthread_self()))
            let probe = ConcurrencyProbe()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        try await database.read { connection in
                            probe.enter(ObjectIdentifier(connection))
                            // No sleep here: on the caller's thread it would hold a pool thread.
                            _ = try connection.query("SELECT 1")
                            probe.leave()
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(probe.peak.load(ordering: .sequentiallyConsistent) <= 2)
            #expect(try await database.read { try scalar($0, "SELECT 41 + 1") } == 42)
        }
    }

    @Test("when every reader is busy, reads wait for one instead of opening more connections")
    func readsWaitForReaders() async throws {
        try await withDatabase(readerCount: 2) { database, _ in
            let probe = ConcurrencyProbe()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        try await database.read { connection in
                            probe.enter(ObjectIdentifier(connection))
                            Thread.sleep(forTimeInterval: 0.003)
                            probe.leave()
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(probe.peak.load(ordering: .sequentiallyConsistent) <= 2)
            #expect(probe.connections.withLock { $0.count } <= 2)
        }
    }

    @Test("a read waiting for a reader can be cancelled and the pool keeps working")
    func cancelWaitingRead() async throws {
        try await withDatabase(readerCount: 1) { database, _ in
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            async let held: Bool = database.read { _ in
                holding.signal()
                return release.wait(timeout: .now() + generousWait) == .success
            }
            #expect(await wait(for: holding))
            let waiting = Task { try await database.read { _ in 1 } }
            try await Task.sleep(for: .milliseconds(20))
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await value(of: waiting) }
            release.signal()
            #expect(try await held)
            #expect(try await database.read { _ in 2 } == 2)
        }
    }
}

/// Records how many read bodies run at once and which connections they get.
final class ConcurrencyProbe: Sendable {
    let active = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    let connections = Mutex<Set<ObjectIdentifier>>([])

    func enter(_ connection: ObjectIdentifier) {
        connections.withLock { _ = $0.insert(connection) }
        let now = active.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
        peak.max(now, ordering: .sequentiallyConsistent)
    }

    func leave() {
        active.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }
}
