import Synchronization

/// The requests this instance holds open (event streams and long polls), counted per user and
/// per client address, each count capped: one user, or one address behind the trusted
/// proxies, cannot take the connections everybody else needs. (Relay sockets need no count of
/// their own: a user has one per call, a newer one replacing the older.)
///
/// ```swift
/// let hold = try held.hold(user: principal.user.id, address: address)   // 429 past a cap
/// defer { hold.release() }
/// ```
final class HeldRequests: Sendable {
    /// Held requests one user may have on this instance; 0 means no cap.
    let perUser: Int
    /// Held requests one client address may have on this instance; 0 means no cap.
    let perAddress: Int
    /// Held requests per user and per address; a dimension without a cap is not counted.
    private let counts = Mutex(Counts())

    private struct Counts {
        var users: [String: Int] = [:]
        var addresses: [String: Int] = [:]

        mutating func add(_ user: String?, _ address: String?) {
            if let user { users[user, default: 0] += 1 }
            if let address { addresses[address, default: 0] += 1 }
        }

        mutating func remove(_ user: String?, _ address: String?) {
            if let user { Self.decrement(&users, user) }
            if let address { Self.decrement(&addresses, address) }
        }

        private static func decrement(_ counts: inout [String: Int], _ key: String) {
            let left = counts[key, default: 1] - 1
            counts[key] = left > 0 ? left : nil
        }
    }

    init(perUser: Int, perAddress: Int) {
        self.perUser = perUser
        self.perAddress = perAddress
    }

    /// One held request; counted until ``release()`` (or until it is freed, whichever first).
    /// It keeps the user and address it counted (no new strings: a held long poll's memory is
    /// a benchmark figure), nil for a dimension without a cap.
    final class Hold: Sendable {
        private let user: String?
        private let address: String?
        private let owner: HeldRequests?
        private let released = Atomic<Bool>(false)

        fileprivate init(user: String?, address: String?, owner: HeldRequests?) {
            self.user = user
            self.address = address
            self.owner = owner
        }

        /// Stops counting this request; later calls do nothing.
        func release() {
            guard let owner, !released.exchange(true, ordering: .relaxed) else { return }
            owner.counts.withLock { $0.remove(user, address) }
        }

        deinit { release() }
    }

    /// The hold of every request when neither dimension is capped: nothing to count or release.
    private static let uncounted = Hold(user: nil, address: nil, owner: nil)

    /// Counts a held request of `user` from `address`: 429 `RATE_LIMITED` when either already
    /// holds as many as it may (nothing is counted then).
    func hold(user: String, address: String) throws(APIError) -> Hold {
        let user = perUser > 0 ? user : nil, address = perAddress > 0 ? address : nil
        if user == nil, address == nil { return Self.uncounted }
        let refused = counts.withLock { counts -> String? in
            if let user, counts.users[user, default: 0] >= perUser { return "this user" }
            if let address, counts.addresses[address, default: 0] >= perAddress { return "this address" }
            counts.add(user, address)
            return nil
        }
        if let refused {
            throw APIError(
                .rateLimited, "too many event streams and long polls are open for \(refused); close one and try again",
                retryAfter: 5)
        }
        return Hold(user: user, address: address, owner: self)
    }
}
