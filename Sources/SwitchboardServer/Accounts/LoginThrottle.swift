import Foundation
import SwitchboardStore

/// How failed logins slow the next ones down (SPEC §8): exponential backoff per client address
/// and per account, where the account's own counter is kept per address first, so nobody can
/// lock a user out from everywhere by failing on purpose from elsewhere. Pure: times and counts
/// are inputs; the counters live in the store (they hold across restarts and instances).
struct LoginThrottle: Sendable, Equatable {
    /// One counter's rule: `free` failures cost nothing; each one after doubles the wait from
    /// `base`, up to `cap`.
    struct Rule: Sendable, Equatable {
        var free: Int
        var base: TimeInterval
        var cap: TimeInterval

        /// The wait after `failures` failures.
        func delay(afterFailures failures: Int) -> TimeInterval {
            guard failures > free else { return 0 }
            return min(cap, base * pow(2, Double(min(failures - free - 1, 30))))
        }
    }

    /// One account from one address: a user mistyping, or a guesser at one account.
    var accountFromAddress = Rule(free: 5, base: 1, cap: 15 * 60)
    /// One address, whatever the accounts: a guesser going through many accounts.
    var anyAccountFromAddress = Rule(free: 20, base: 1, cap: 15 * 60)
    /// One account from everywhere: a distributed guesser. Kept short, so that failing on
    /// purpose from many addresses cannot lock its owner out for long.
    var account = Rule(free: 50, base: 1, cap: 30)

    /// A counter nobody touched for a day is forgotten.
    static let quietForgives: Int64 = 24 * 3600 * 1000
    /// An address that logged in to an account is remembered for 30 days after its last login.
    static let knownForgotten: Int64 = 30 * 24 * 3600 * 1000

    /// The record that `address` logged in to `username` (it exempts the address from the
    /// account-wide counter).
    func knownKey(username: String, address: String) -> String { "known:\(username)\u{1F}\(address)" }

    /// A counter's key in the store, with its rule.
    struct Key: Sendable, Equatable, Hashable {
        var text: String
        var rule: Rule

        static func == (a: Key, b: Key) -> Bool { a.text == b.text }
        func hash(into hasher: inout Hasher) { hasher.combine(text) }
    }

    /// The counters a login of `username` from `address` is held to.
    func keys(username: String, address: String) -> [Key] {
        [
            Key(text: "account-address:\(username)\u{1F}\(address)", rule: accountFromAddress),
            Key(text: "address:\(address)", rule: anyAccountFromAddress),
            Key(text: "account:\(username)", rule: account),
        ]
    }

    /// The counters a success resets: the account's (from this address and everywhere); the
    /// address's stays, or a guesser with one account of its own could reset it at will.
    func keysReset(username: String, address: String) -> [Key] {
        keys(username: username, address: address).filter { !$0.text.hasPrefix("address:") }
    }
}

/// A counter as stored: failures so far, the moment logins may try again (ms), last change.
struct LoginThrottleEntry: Sendable, Equatable {
    var failures: Int
    var blockedUntilMS: Int64
}

/// The login counters in the store (table `login_throttle`).
protocol LoginThrottleRepository {
    /// The counters there are of `keys`.
    func entries(_ keys: [String]) throws -> [String: LoginThrottleEntry]
    /// Stores `entry` for `key` at `nowMS`.
    func store(_ entry: LoginThrottleEntry, for key: String, at nowMS: Int64) throws
    /// Removes the counters of `keys`.
    func clear(_ keys: [String]) throws
    /// Removes counters not changed since `beforeMS` (a day of quiet forgives), and records of
    /// known addresses not refreshed since `knownBeforeMS`.
    func prune(before beforeMS: Int64, knownBefore knownBeforeMS: Int64) throws
}

/// ``LoginThrottleRepository`` in SQL that SQLite and PostgreSQL both run.
struct SQLLoginThrottleRepository: LoginThrottleRepository {
    let connection: any SQLExecutor

    func entries(_ keys: [String]) throws -> [String: LoginThrottleEntry] {
        var found: [String: LoginThrottleEntry] = [:]
        for key in keys {
            for row in try connection.query("SELECT failures, blocked_until_ms FROM login_throttle WHERE key = ?", [.text(key)]) {
                found[key] = LoginThrottleEntry(failures: try row.int("failures"), blockedUntilMS: try row.int64("blocked_until_ms"))
            }
        }
        return found
    }

    func store(_ entry: LoginThrottleEntry, for key: String, at nowMS: Int64) throws {
        try connection.run(
            """
            INSERT INTO login_throttle (key, failures, blocked_until_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, blocked_until_ms = excluded.blocked_until_ms,
                updated_at_ms = excluded.updated_at_ms
            """,
            [.text(key), .integer(Int64(entry.failures)), .integer(entry.blockedUntilMS), .integer(nowMS)])
    }

    func clear(_ keys: [String]) throws {
        for key in keys { try connection.run("DELETE FROM login_throttle WHERE key = ?", [.text(key)]) }
    }

    func prune(before beforeMS: Int64, knownBefore knownBeforeMS: Int64) throws {
        try connection.run(
            "DELETE FROM login_throttle WHERE updated_at_ms < ? AND (substr(key, 1, 6) != 'known:' OR updated_at_ms < ?)",
            [.integer(beforeMS), .integer(knownBeforeMS)])
    }
}
