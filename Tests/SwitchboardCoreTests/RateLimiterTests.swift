import SwitchboardCore
import Testing

/// The one limiter's pure policy: sliding windows in slots, breakers, back-off, all-or-nothing.
@Suite("The one limiter: windows, breakers and back-off", .timeLimit(.minutes(1)))
struct RateLimiterTests {
    /// Takes one unit at each of `times` (ms); the decisions.
    private func run(_ limit: RateLimit, at times: [Int64]) -> [RateDecision] {
        var counter = RateCounter()
        return times.map { time in
            let (decision, next) = RateLimiter.take(1, of: limit, from: counter, nowMS: time)
            counter = next
            return decision
        }
    }

    @Test func theSixthRingInAnySixtySecondsIsRefusedAndOpensTheBreaker() {
        let limit = RateLimit.per(60, 5, breakerSeconds: 600)
        let decisions = run(limit, at: [0, 1_000, 2_000, 3_000, 4_000, 5_000, 70_000, 604_999, 605_000])
        #expect(decisions[0..<5].allSatisfy { $0.isAllowed })
        #expect(decisions[5] == .refused(retryAfterMS: 600_000), "the 6th: refused for the breaker's ten minutes")
        #expect(!decisions[6].isAllowed && !decisions[7].isAllowed, "closed while the breaker runs, window or not")
        #expect(decisions[8].isAllowed, "open again ten minutes after the refusal")
    }

    @Test(arguments: [1, 2, 3, 5, 7, 20, 60])
    func noWindowEverHoldsMoreThanTheLimit(count: Int) {
        // Units tried every 700 ms for ten windows: every accepted set, looked at through every
        // 60 s window, has at most `count` members.
        let limit = RateLimit.per(60, count)
        let times = stride(from: Int64(0), to: 600_000, by: 700).map { $0 }
        let accepted = zip(times, run(limit, at: times)).filter { $0.1.isAllowed }.map(\.0)
        #expect(!accepted.isEmpty)
        for start in stride(from: Int64(-60_000), to: 600_000, by: 100) {
            let inWindow = accepted.filter { $0 > start && $0 <= start + 60_000 }.count
            #expect(inWindow <= count, "window ending \(start + 60_000) holds \(inWindow)")
        }
        // And the limit does not starve: units are forgotten at most one slot (5 %) late, so in
        // steady state a window admits at least 95 % of the limit, less one.
        let lastWindow = accepted.filter { $0 > 540_000 }.count
        #expect(lastWindow >= count * 19 / 20 - 1, "last window admitted \(lastWindow)")
    }

    @Test func retryAfterIsWhenTheOldestSlotLeavesTheWindow() {
        let limit = RateLimit.per(60, 2)
        var counter = RateCounter()
        for time: Int64 in [0, 10_000] { counter = RateLimiter.take(1, of: limit, from: counter, nowMS: time).1 }
        let decision = RateLimiter.check(1, of: limit, in: counter, nowMS: 20_000)
        // The first unit sits in the slot [0, 3 000): it leaves the window at 63 000.
        #expect(decision == .refused(retryAfterMS: 43_000))
        #expect(decision.retryAfterSeconds == 43)
        #expect(RateLimiter.check(1, of: limit, in: counter, nowMS: 63_000).isAllowed)
        #expect(
            RateLimiter.check(3, of: limit, in: RateCounter(), nowMS: 0) == .refused(retryAfterMS: 60_000),
            "more than the limit at once: never")
    }

    @Test func costsCountAsManyUnits() {
        let limit = RateLimit.per(3600, 5000)
        let (first, counter) = RateLimiter.take(4000, of: limit, from: RateCounter(), nowMS: 0)
        #expect(first.isAllowed)
        #expect(!RateLimiter.take(1001, of: limit, from: counter, nowMS: 1).0.isAllowed)
        #expect(RateLimiter.take(1000, of: limit, from: counter, nowMS: 1).0.isAllowed)
    }

    @Test func takeAllTakesFromEveryCounterOrFromNone() {
        let perCaller = RateLimit.per(600, 3), perCallee = RateLimit.per(60, 1)
        var counters = [RateCounter(), RateCounter()]
        var (decision, next) = RateLimiter.takeAll(1, of: [perCaller, perCallee], from: counters, nowMS: 0)
        #expect(decision.isAllowed)
        counters = next
        (decision, next) = RateLimiter.takeAll(1, of: [perCaller, perCallee], from: counters, nowMS: 1_000)
        #expect(!decision.isAllowed)
        #expect(
            RateLimiter.used(next[0], perCaller, nowMS: 1_000) == 1,
            "the caller's counter took nothing for the refused call")
    }

    @Test func backOffDoublesAndForgivingTakesOneFailureBack() {
        let backoff = Backoff(free: 2, baseMS: 1_000, capMS: 4_000)
        var counter = RateCounter()
        for _ in 0..<2 { counter = RateLimiter.fail(counter, backoff, nowMS: 0) }
        #expect(counter.blockedUntilMS == 0, "free failures")
        counter = RateLimiter.fail(counter, backoff, nowMS: 0)
        #expect(counter.blockedUntilMS == 1_000)
        counter = RateLimiter.fail(counter, backoff, nowMS: 0)
        counter = RateLimiter.fail(counter, backoff, nowMS: 0)
        counter = RateLimiter.fail(counter, backoff, nowMS: 0)
        #expect(counter.blockedUntilMS == 4_000, "capped")
        #expect(backoff.delayMS(afterFailures: Int.max) == 4_000, "no overflow")
        var forgiven = RateLimiter.forgive(RateLimiter.fail(RateCounter(failures: 2), backoff, nowMS: 0), backoff)
        #expect(forgiven.failures == 2 && forgiven.blockedUntilMS == 0)
        forgiven = RateLimiter.forgive(forgiven, backoff)
        #expect(forgiven.failures == 1)
    }

    @Test func storedSlotsRoundTripAndDamageIsAnError() throws {
        let counter = RateCounter(
            slots: [.init(startMS: 3_000, units: 2), .init(startMS: 6_000, units: 1)], failures: 4, blockedUntilMS: 9)
        #expect(try RateCounter(slotText: counter.slotText, failures: 4, blockedUntilMS: 9) == counter)
        #expect(try RateCounter(slotText: "", failures: 0, blockedUntilMS: 0).isEmpty)
        for damaged in ["3000", "3000:x", "a:1", "3000:-1", ",", "1:1,"] {
            #expect(throws: RateCounterFormatError.self, "\(damaged)") {
                try RateCounter(slotText: damaged, failures: 0, blockedUntilMS: 0)
            }
        }
    }
}
