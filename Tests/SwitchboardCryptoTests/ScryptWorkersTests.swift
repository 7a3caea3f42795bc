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
