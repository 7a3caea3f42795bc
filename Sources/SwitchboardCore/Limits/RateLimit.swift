/// One limit of the server's one limiter: at most `count` units in any `window` (a sliding
/// window), and, when `breaker` is set, a refusal that keeps every later attempt out for that
/// long. Pure data: every limit the server has (logins, registrations, rings, writes) is one of
/// these with its own key.
public struct RateLimit: Sendable, Hashable {
    /// The most units in any window.
    public var count: Int
    /// The window, in milliseconds.
    public var windowMS: Int64
    /// How long a refusal keeps the key closed (ms); 0: no breaker.
    public var breakerMS: Int64

    public init(count: Int, windowMS: Int64, breakerMS: Int64 = 0) {
        self.count = count
        self.windowMS = windowMS
        self.breakerMS = breakerMS
    }

    /// `count` per `seconds`.
    public static func per(_ seconds: Int64, _ count: Int, breakerSeconds: Int64 = 0) -> RateLimit {
        RateLimit(count: count, windowMS: seconds * 1000, breakerMS: breakerSeconds * 1000)
    }

    /// A window is kept as this many slots: a unit counts while any part of its slot is inside
    /// the window, so the limit is never exceeded in any window, and a unit is forgotten
    /// between one window and one window plus a slot (5 %) after it was taken.
    public static let slotsPerWindow: Int64 = 20

    /// The width of one slot (ms).
    public var slotMS: Int64 { max(1, (windowMS + Self.slotsPerWindow - 1) / Self.slotsPerWindow) }
}

/// Exponential back-off after failures (logins): `free` failures cost nothing; each one after
/// doubles the wait from `baseMS`, up to `capMS`.
public struct Backoff: Sendable, Hashable {
    public var free: Int
    public var baseMS: Int64
    public var capMS: Int64

    public init(free: Int, baseMS: Int64, capMS: Int64) {
        self.free = free
        self.baseMS = baseMS
        self.capMS = capMS
    }

    /// The wait after `failures` failures (ms).
    public func delayMS(afterFailures failures: Int) -> Int64 {
        guard failures > free else { return 0 }
        let doublings = min(failures - free - 1, 40)
        let (product, overflow) = baseMS.multipliedReportingOverflow(by: Int64(1) << doublings)
        return overflow ? capMS : min(capMS, product)
    }
}

/// A counter as the store keeps it: the units taken per slot, failures (for a ``Backoff``), and
/// the moment the key opens again.
public struct RateCounter: Sendable, Equatable {
    /// Units taken, by slot start (ms), oldest first.
    public var slots: [Slot]
    /// Failures counted by a ``Backoff``.
    public var failures: Int
    /// Attempts are refused until then (ms since 1970): a tripped breaker or a back-off.
    public var blockedUntilMS: Int64

    public struct Slot: Sendable, Equatable {
        public var startMS: Int64
        public var units: Int

        public init(startMS: Int64, units: Int) {
            self.startMS = startMS
            self.units = units
        }
    }

    public init(slots: [Slot] = [], failures: Int = 0, blockedUntilMS: Int64 = 0) {
        self.slots = slots
        self.failures = failures
        self.blockedUntilMS = blockedUntilMS
    }

    /// A counter that holds nothing: the same as none at all.
    public var isEmpty: Bool { slots.isEmpty && failures == 0 && blockedUntilMS == 0 }

    /// The slots as stored: `start:units` pairs separated by commas.
    public var slotText: String {
        slots.map { "\($0.startMS):\($0.units)" }.joined(separator: ",")
    }

    /// Reads ``slotText``; a damaged text is an error, never an empty counter.
    public init(slotText: String, failures: Int, blockedUntilMS: Int64) throws(RateCounterFormatError) {
        var slots: [Slot] = []
        if !slotText.isEmpty {
            for pair in slotText.split(separator: ",", omittingEmptySubsequences: false) {
                let parts = pair.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let start = Int64(parts[0]), let units = Int(parts[1]), units >= 0 else {
                    throw RateCounterFormatError(text: slotText)
                }
                slots.append(Slot(startMS: start, units: units))
            }
        }
        self.init(slots: slots, failures: failures, blockedUntilMS: blockedUntilMS)
    }
}

/// A stored counter's slots that do not parse.
public struct RateCounterFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    public let text: String
    public var description: String { "a rate counter's slots do not parse: '\(text.prefix(80))'" }
}

/// What the limiter decided.
public enum RateDecision: Sendable, Equatable {
    case allowed
    /// Refused; the key may be tried again in this many milliseconds.
    case refused(retryAfterMS: Int64)

    public var isAllowed: Bool { self == .allowed }

    /// Whole seconds to wait, at least 1 (for `Retry-After`).
    public var retryAfterSeconds: Int? {
        guard case .refused(let ms) = self else { return nil }
        return Int(max(1, (ms + 999) / 1000))
    }
}

/// The server's one limiter: pure decisions over ``RateCounter``s, with time as an input. The
/// counters live in the store (so a limit holds across instances and restarts); callers read
/// them, ask here, and write back what comes out, in one transaction.
public enum RateLimiter {
    /// Units `counter` holds inside the window at `nowMS` under `limit`.
    public static func used(_ counter: RateCounter, _ limit: RateLimit, nowMS: Int64) -> Int {
        let slot = limit.slotMS
        return counter.slots.reduce(0) { $0 + ($1.startMS + slot > nowMS - limit.windowMS ? $1.units : 0) }
    }

    /// Whether `cost` units may be taken now, without taking them.
    public static func check(_ cost: Int, of limit: RateLimit, in counter: RateCounter, nowMS: Int64) -> RateDecision {
        if counter.blockedUntilMS > nowMS { return .refused(retryAfterMS: counter.blockedUntilMS - nowMS) }
        let used = used(counter, limit, nowMS: nowMS)
        guard used + cost > limit.count else { return .allowed }
        guard cost <= limit.count else { return .refused(retryAfterMS: limit.windowMS) }
        // The wait: until enough of the oldest slots have left the window.
        var remaining = used
        let slot = limit.slotMS
        for entry in counter.slots where entry.startMS + slot > nowMS - limit.windowMS {
            remaining -= entry.units
            if remaining + cost <= limit.count {
                return .refused(retryAfterMS: max(1, entry.startMS + slot + limit.windowMS - nowMS))
            }
        }
        return .refused(retryAfterMS: limit.windowMS)
    }

    /// Takes `cost` units when the limit allows them; otherwise refuses and, with a breaker,
    /// closes the key for the breaker's time. Returns the decision and the counter to store.
    public static func take(
        _ cost: Int, of limit: RateLimit, from counter: RateCounter, nowMS: Int64
    ) -> (RateDecision, RateCounter) {
        var counter = pruned(counter, limit, nowMS: nowMS)
        let decision = check(cost, of: limit, in: counter, nowMS: nowMS)
        switch decision {
        case .allowed:
            add(cost, to: &counter, limit, nowMS: nowMS)
            return (.allowed, counter)
        case .refused(let wait):
            guard limit.breakerMS > 0, counter.blockedUntilMS <= nowMS else { return (decision, counter) }
            counter.blockedUntilMS = nowMS + limit.breakerMS
            return (.refused(retryAfterMS: max(wait, limit.breakerMS)), counter)
        }
    }

    /// Takes `cost` units from every counter, or from none: when any refuses, the answer is
    /// the refusal that waits longest, and only the refusing counters change (a breaker among
    /// them closes). `counters` and the result are in the order of `limits`.
    public static func takeAll(
        _ cost: Int, of limits: [RateLimit], from counters: [RateCounter], nowMS: Int64
    ) -> (RateDecision, [RateCounter]) {
        precondition(limits.count == counters.count, "one counter per limit")
        let taken = zip(limits, counters).map { take(cost, of: $0, from: $1, nowMS: nowMS) }
        let waits = taken.compactMap { decision, _ -> Int64? in
            if case .refused(let wait) = decision { return wait }
            return nil
        }
        guard let longest = waits.max() else { return (.allowed, taken.map(\.1)) }
        let updated = zip(taken, counters).map { result, original in result.0.isAllowed ? original : result.1 }
        return (.refused(retryAfterMS: longest), updated)
    }

    /// Counts a failure under `backoff`: the key is closed for the back-off's wait.
    public static func fail(_ counter: RateCounter, _ backoff: Backoff, nowMS: Int64) -> RateCounter {
        var counter = counter
        counter.failures += 1
        counter.blockedUntilMS = nowMS + backoff.delayMS(afterFailures: counter.failures)
        return counter
    }

    /// Takes one failure back (a success after it was counted): the key stays closed only while
    /// the failures left still call for it.
    public static func forgive(_ counter: RateCounter, _ backoff: Backoff) -> RateCounter {
        var counter = counter
        counter.failures = max(0, counter.failures - 1)
        if backoff.delayMS(afterFailures: counter.failures) == 0 { counter.blockedUntilMS = 0 }
        return counter
    }

    /// `counter` without the slots that left the window and a breaker that has opened.
    public static func pruned(_ counter: RateCounter, _ limit: RateLimit, nowMS: Int64) -> RateCounter {
        var counter = counter
        let slot = limit.slotMS
        counter.slots.removeAll { $0.startMS + slot <= nowMS - limit.windowMS }
        if counter.blockedUntilMS <= nowMS, counter.failures == 0 { counter.blockedUntilMS = 0 }
        return counter
    }

    private static func add(_ cost: Int, to counter: inout RateCounter, _ limit: RateLimit, nowMS: Int64) {
        guard cost > 0 else { return }
        let slot = limit.slotMS
        let start = nowMS - ((nowMS % slot) + slot) % slot
        if let last = counter.slots.indices.last, counter.slots[last].startMS == start {
            counter.slots[last].units += cost
        } else {
            counter.slots.append(RateCounter.Slot(startMS: start, units: cost))
        }
    }
}
