import Foundation
import SwitchboardCore

/// How failed logins slow the next ones down (SPEC §8): exponential back-off per client address
/// and per account, where the account's own counter is kept per address first, so nobody can
/// lock a user out from everywhere by failing on purpose from elsewhere. The keys and rules of
/// the server's one limiter (``RateLimiter``, ``Backoff``); the counters live in the store.
struct LoginThrottle: Sendable, Equatable {
    /// One account from one address: a user mistyping, or a guesser at one account.
    var accountFromAddress = Backoff(free: 5, baseMS: 1000, capMS: 15 * 60_000)
    /// One address, whatever the accounts: a guesser going through many accounts.
    var anyAccountFromAddress = Backoff(free: 20, baseMS: 1000, capMS: 15 * 60_000)
    /// One account from everywhere: a distributed guesser. Kept short, so that failing on
    /// purpose from many addresses cannot lock its owner out for long.
    var account = Backoff(free: 50, baseMS: 1000, capMS: 30_000)

    /// A counter nobody touched for a day is forgotten.
    static let quietForgives: Int64 = 24 * 3600 * 1000
    /// An address that logged in to an account is remembered for 30 days after its last login.
    static let knownForgotten: Int64 = 30 * 24 * 3600 * 1000

    /// The record that `address` logged in to `username` (it exempts the address from the
    /// account-wide counter). Its `known:` prefix keeps it for ``knownForgotten``.
    func knownKey(username: String, address: String) -> String { "known:\(username)\u{1F}\(address)" }

    /// A counter's key in the store, with its rule.
    struct Key: Sendable, Equatable, Hashable {
        var text: String
        var rule: Backoff

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
