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
    private let counts = Mutex<[String: Int]>([:])

    init(perUser: Int, perAddress: Int) {
        self.perUser = perUser
        self.perAddress = perAddress
    }

    /// One held request; counted until ``release()`` (or until it is freed, whichever first).
    final class Hold: Sendable {
        private let keys: [String]
        private let owner: HeldRequests
        private let released = Atomic<Bool>(false)

        fileprivate init(keys: [String], owner: HeldRequests) {
            self.keys = keys
            self.owner = owner
        }

        /// Stops counting this request; later calls do nothing.
        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            owner.counts.withLock { counts in
                for key in keys {
                    let left = counts[key, default: 1] - 1
                    counts[key] = left > 0 ? left : nil
                }
            }
        }

        deinit { release() }
    }

    /// Counts a held request of `user` from `address`: 429 `RATE_LIMITED` when either already
    /// holds as many as it may (nothing is counted then).
    func hold(user: String, address: String) throws(APIError) -> Hold {
        let limits = [("user:" + user, perUser, "this user"), ("address:" + address, perAddress, "this address")]
        let refused = counts.withLock { counts -> String? in
            if let full = limits.first(where: { $0.1 > 0 && counts[$0.0, default: 0] >= $0.1 }) { return full.2 }
            for (key, _, _) in limits { counts[key, default: 0] += 1 }
            return nil
        }
        if let refused {
            throw APIError(
                .rateLimited, "too many event streams and long polls are open for \(refused); close one and try again",
                retryAfter: 5)
        }
        return Hold(keys: limits.map(\.0), owner: self)
    }

    /// Held requests counted now for `user`.
    func count(user: String) -> Int { counts.withLock { $0["user:" + user] ?? 0 } }
}
