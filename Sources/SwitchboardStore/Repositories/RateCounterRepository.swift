import SwitchboardCore

/// The counters of the server's one limiter (``RateLimiter``), in the store (table
/// `rate_counters`): they hold across restarts and, on PostgreSQL, across instances.
public protocol RateCounterRepository {
    /// The counters there are of `keys` (a plain read: absent keys are absent).
    func counters(_ keys: [String]) throws -> [String: RateCounter]
    /// Reads `keys` for an update in this transaction: on PostgreSQL each row is locked (in key
    /// order, so two writers never wait on each other in a circle) until the transaction ends,
    /// so concurrent requests on any instance take turns. A key without a row reads as empty.
    func lock(_ keys: [String], at nowMS: Int64) throws -> [String: RateCounter]
    /// Stores `counter` for `key` at `nowMS`.
    func store(_ counter: RateCounter, for key: String, at nowMS: Int64) throws
    /// Removes the counters of `keys`.
    func clear(_ keys: [String]) throws
    /// Removes counters not changed since `beforeMS`, except the login throttle's records of
    /// known addresses (keys starting `known:`), which go once not changed since `keptBeforeMS`.
    func prune(before beforeMS: Int64, keptBefore keptBeforeMS: Int64) throws
}

extension RateCounterRepository {
    /// Takes `cost` from each key's counter under its limit, or from none (``RateLimiter/takeAll(_:of:from:nowMS:)``),
    /// storing what changed. The decision is the caller's to act on.
    public func take(_ cost: Int, _ limits: [(key: String, limit: RateLimit)], at nowMS: Int64) throws -> RateDecision {
        guard !limits.isEmpty else { return .allowed }
        let found = try lock(limits.map(\.key), at: nowMS)
        let before = limits.map { found[$0.key] ?? RateCounter() }
        let (decision, after) = RateLimiter.takeAll(cost, of: limits.map(\.limit), from: before, nowMS: nowMS)
        for index in limits.indices where after[index] != before[index] {
            try store(after[index], for: limits[index].key, at: nowMS)
        }
        return decision
    }
}

/// ``RateCounterRepository`` in SQL that SQLite and PostgreSQL both run, on the connection of
/// one transaction or snapshot.
public struct SQLRateCounterRepository: RateCounterRepository {
    let connection: any SQLExecutor

    public init(connection: any SQLExecutor) { self.connection = connection }

    public func counters(_ keys: [String]) throws -> [String: RateCounter] {
        var found: [String: RateCounter] = [:]
        for key in keys {
            for row in try connection.query(
                "SELECT failures, blocked_until_ms, slots FROM rate_counters WHERE key = ?", [.text(key)])
            {
                found[key] = try Self.counter(row)
            }
        }
        return found
    }

    public func lock(_ keys: [String], at nowMS: Int64) throws -> [String: RateCounter] {
        var found: [String: RateCounter] = [:]
        for key in Set(keys).sorted() {
            // One statement per key: an upsert that changes nothing but takes the row's lock on
            // PostgreSQL (SQLite's writer holds the whole database already) and returns the row
            // as the latest commit left it.
            for row in try connection.query(
                """
                INSERT INTO rate_counters (key, failures, blocked_until_ms, slots, updated_at_ms) VALUES (?1, 0, 0, '', ?2)
                ON CONFLICT (key) DO UPDATE SET failures = rate_counters.failures
                RETURNING failures, blocked_until_ms, slots
                """,
                [.text(key), .integer(nowMS)])
            {
                found[key] = try Self.counter(row)
            }
        }
        return found
    }

    public func store(_ counter: RateCounter, for key: String, at nowMS: Int64) throws {
        try connection.run(
            """
            INSERT INTO rate_counters (key, failures, blocked_until_ms, slots, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, blocked_until_ms = excluded.blocked_until_ms,
                slots = excluded.slots, updated_at_ms = excluded.updated_at_ms
            """,
            [
                .text(key), .integer(Int64(counter.failures)), .integer(counter.blockedUntilMS),
                .text(counter.slotText), .integer(nowMS),
            ])
    }

    public func clear(_ keys: [String]) throws {
        for key in keys { try connection.run("DELETE FROM rate_counters WHERE key = ?", [.text(key)]) }
    }

    public func prune(before beforeMS: Int64, keptBefore keptBeforeMS: Int64) throws {
        try connection.run(
            "DELETE FROM rate_counters WHERE updated_at_ms < ? AND (substr(key, 1, 6) != 'known:' OR updated_at_ms < ?)",
            [.integer(beforeMS), .integer(keptBeforeMS)])
    }

    private static func counter(_ row: SQLiteRow) throws -> RateCounter {
        try RateCounter(
            slotText: try row.string("slots"), failures: try row.int("failures"),
            blockedUntilMS: try row.int64("blocked_until_ms"))
    }
}
