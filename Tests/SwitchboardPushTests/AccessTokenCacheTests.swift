import Foundation
import Synchronization
import Testing
import SwitchboardTesting
@testable import SwitchboardPush

/// The auth-token cache every OAuth-style channel shares (FCM, Huawei, OPPO, vivo), on a manual
/// clock: one fetch for many waiting requests, one after many rejections, a due replacement
/// fetched beside the requests.
@Suite("Access tokens: one fetch for many, on a manual clock", .timeLimit(.minutes(1)))
struct AccessTokenCacheTests {
    final class Service: Sendable {
        let fetched = Mutex(0)
        /// While closed, fetches wait (a slow token endpoint).
        let gate = Mutex(true)
        func fetch() async throws -> (token: String, lifetime: TimeInterval) {
            while gate.withLock({ !$0 }) { try await Task.sleep(nanoseconds: 1_000_000) }
            let number = fetched.withLock {
                $0 += 1
                return $0
            }
            return ("token-\(number)", 24 * 3600)
        }
    }

    static func requests(_ cache: AccessTokenCache, _ count: Int) async throws -> [String] {
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<count { group.addTask { try await cache.token().0 } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func manyRequestsWaitForOneFetchAndManyRejectionsCauseOne() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let service = Service()
        service.gate.withLock { $0 = false }
        let cache = AccessTokenCache(now: { clock.withLock { $0 } }) { _ in try await service.fetch() }
        let waiting = Task { try await Self.requests(cache, 50) }
        try await Task.sleep(nanoseconds: 20_000_000)
        service.gate.withLock { $0 = true }
        let first = try await waiting.value
        #expect(first.count == 50 && Set(first) == ["token-1"] && cache.fetchCount == 1)

        // The service rejects token-1 for every request in flight: one new token, not fifty.
        let (_, issued) = try await cache.token()
        for _ in 0..<50 { cache.rejected(issuedAt: issued) }
        let second = try await Self.requests(cache, 50)
        #expect(Set(second) == ["token-2"] && cache.fetchCount == 2)
        // A late rejection of token-1 does not touch token-2.
        cache.rejected(issuedAt: issued)
        #expect(try await cache.token().0 == "token-2" && cache.fetchCount == 2)
    }

    @Test func aTokenDueForReplacementKeepsServingWhileItsSuccessorIsFetched() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let service = Service()
        let cache = AccessTokenCache(now: { clock.withLock { $0 } }) { _ in try await service.fetch() }
        #expect(try await cache.token().0 == "token-1")
        // 23 h 56 min later: inside the last five minutes of its 24 hours.
        clock.withLock { $0 = $0.addingTimeInterval(24 * 3600 - 4 * 60) }
        service.gate.withLock { $0 = false }
        #expect(try await cache.token().0 == "token-1", "served at once while the successor is fetched")
        service.gate.withLock { $0 = true }
        #expect(await eventually { cache.fetchCount == 2 })
        #expect(try await cache.token().0 == "token-2")
        // Past its expiry a token is never sent: requests wait for the next.
        clock.withLock { $0 = $0.addingTimeInterval(25 * 3600) }
        #expect(try await cache.token().0 == "token-3")
    }

    /// A token endpoint that refuses (wrong credentials) is asked once per hold, not once per job.
    @Test func aFailedFetchIsHeldForAFewSecondsInsteadOfRepeatedPerRequest() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let attempts = Mutex(0)
        let cache = AccessTokenCache(now: { clock.withLock { $0 } }) { _ in
            attempts.withLock { $0 += 1 }
            throw OAuthTokenError(description: "invalid_client")
        }
        for _ in 0..<20 { await #expect(throws: (any Error).self) { try await cache.token() } }
        #expect(attempts.withLock { $0 } == 1)
        clock.withLock { $0 = $0.addingTimeInterval(AccessTokenCache.failureHold + 0.5) }
        await #expect(throws: (any Error).self) { try await cache.token() }
        #expect(attempts.withLock { $0 } == 2, "tried again once the hold is over")
    }
}
