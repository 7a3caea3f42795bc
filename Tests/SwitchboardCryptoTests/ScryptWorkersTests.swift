import Dispatch
@testable import SwitchboardCrypto
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Async password hashing off the cooperative pool", .timeLimit(.minutes(3)))
struct ScryptWorkersTests {
    @Test("8 concurrent tasks hash and verify through the async API without deadlock")
    func concurrentAsync() async throws {
        let hasher = PasswordHasher(cost: .fastForTests)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let stored = try await hasher.hash("password \(index)")
                    let right = try await hasher.verify("password \(index)", against: stored)
                    let wrong = try await hasher.verify("password \(index + 1)", against: stored)
                    return right && !wrong
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 8 && results.allSatisfy { $0 })
    }

    @Test("async verify reports a malformed hash as the same CryptoError as the sync one")
    func asyncErrors() async {
        let error = await #expect(throws: CryptoError.self) {
            try await PasswordHasher(cost: .fastForTests).verify("pw", against: "$scrypt$garbage")
        }
        #expect(error?.code == .malformedInput)
    }

    @Test("no more jobs than queues ever run at once, and every job completes", arguments: [1, 2])
    func concurrencyIsBounded(width: Int) async throws {
        let workers = ScryptWorkers(width: width, label: "test.workers")
        let gauge = ConcurrencyGauge()
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await workers.run {
                        gauge.enter()
                        // Blocking is fine here: this is one of the workers' own serial queues.
                        usleep(20_000)
                        gauge.leave()
                        return index
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<8).reduce(0, +))
        let peak = gauge.peak
        #expect(peak >= 1 && peak <= width)
    }

    @Test("a waiting check runs before every waiting hash, and a full line is refused at once")
    func priorityAndBound() async throws {
        let workers = ScryptWorkers(width: 1, waitingLimit: 2, label: "test.workers.lines")
        let gate = DispatchSemaphore(value: 0)
        let record = JobRecord()
        let blocker = Task {
            try await workers.run(.later) {
                record.started.store(true, ordering: .relaxed)
                gate.wait()
                record.append("blocker")
            }
        }
        func enqueue(_ name: String, _ priority: ScryptWorkers.Priority) -> Task<Void, any Error> {
            Task { try await workers.run(priority) { record.append(name) } }
        }
        // Each job is queued before the next is sent, so the order of arrival is known.
        func waitUntil(first: Int, later: Int) async throws {
            for _ in 0..<6_000 where workers.waiting != (first, later) { try await Task.sleep(for: .milliseconds(5)) }
            #expect(workers.waiting == (first, later))
        }
        for _ in 0..<6_000 where !record.started.load(ordering: .relaxed) {
            try await Task.sleep(for: .milliseconds(5))
        }
        let hashes = [enqueue("hash 1", .later)]
        try await waitUntil(first: 0, later: 1)
        let second = enqueue("hash 2", .later)
        try await waitUntil(first: 0, later: 2)
        let busy = await #expect(throws: ScryptWorkers.Busy.self) { try await workers.run(.later) { 0 } }
        #expect((busy?.retryAfterSeconds ?? 0) >= 1)
        let check = enqueue("check", .first)
        try await waitUntil(first: 1, later: 2)
        gate.signal()
        for task in hashes + [second, check, blocker] { try await task.value }
        #expect(record.order == ["blocker", "check", "hash 1", "hash 2"])
        #expect(workers.waiting == (0, 0))
    }

    @Test("errors thrown by a job reach the awaiting task")
    func jobErrors() async {
        let workers = ScryptWorkers(width: 2, label: "test.workers.errors")
        await #expect(throws: CryptoError.self) {
            try await workers.run { () throws -> Int in
                throw CryptoError(code: .library, operation: "test", detail: "boom")
            }
        }
    }
}

/// The order jobs ran in, and whether the first one started.
private final class JobRecord: Sendable {
    let started = Atomic<Bool>(false)
    private let names = Mutex<[String]>([])
    func append(_ name: String) { names.withLock { $0.append(name) } }
    var order: [String] { names.withLock { $0 } }
}

/// Counts jobs running at once and remembers the highest count seen.
private final class ConcurrencyGauge: Sendable {
    private let state = Mutex((now: 0, peak: 0))

    func enter() {
        state.withLock { state in
            state.now += 1
            state.peak = max(state.peak, state.now)
        }
    }

    func leave() {
        state.withLock { $0.now -= 1 }
    }

    var peak: Int { state.withLock { $0.peak } }
}
