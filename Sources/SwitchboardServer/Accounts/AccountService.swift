import SwitchboardCore
import SwitchboardCrypto
import SwitchboardStore
import SwitchboardWire

/// Registration, login, logout and `/me`.
struct AccountService: Sendable {
    let store: ServerStore
    let hasher: PasswordHasher

    /// A hash of a password nobody has, verified when the username is unknown so that a
    /// wrong username takes as long as a wrong password.
    let decoyHash: String
    let throttle: LoginThrottle

    init(store: ServerStore, hasher: PasswordHasher, throttle: LoginThrottle = LoginThrottle()) throws {
        self.throttle = throttle
        self.store = store
        self.hasher = hasher
        decoyHash = try hasher.hash(SecureRandom.token())
    }

    /// Registers an account, unless `address` registered too many lately (429 `RATE_LIMITED`,
    /// counted before the password is hashed, so a flood costs no hashing).
    func register(_ request: RegisterRequest, from address: String) async throws -> AuthSession {
        let username = try AccountValidation.username(request.username)
        try AccountValidation.password(request.password)
        let displayName = try AccountValidation.displayName(request.displayName)
        try await store.write { transaction in
            try transaction.requireQuota(
                ServerLimits.registrationKey(address: address), transaction.limits.registrationsPerAddress,
                what: "registrations from this address")
        }
        let passwordHash = try await Self.scrypt { try await hasher.hash(request.password) }
        let token = Token.generate()
        let session = try await store.write { transaction -> AuthSession? in
            let user = User(id: transaction.newID(), username: username, displayName: displayName)
            guard try transaction.accounts.createUser(user, passwordHash: passwordHash, at: transaction.timestamp)
            else { return nil }
            try Self.startSession(for: user.id, token: token, in: transaction)
            return AuthSession(user: user, token: token.text, eventCursor: 0)
        }
        guard let session else {
            throw APIError(.usernameTaken, "the username '\(username)' is taken", field: "username")
        }
        return session
    }

    /// Logs in, unless failed logins of this account from this address, of this address, or of
    /// this account from everywhere hold it back for now (429 `RATE_LIMITED` with
    /// `Retry-After`; ``LoginThrottle``). The password is not even checked then. Each attempt
    /// is counted as a failure before its password is checked, in the write that checks the
    /// counters (guesses sent at once cannot all pass the check), and taken back when it
    /// succeeds. An address that logged in to the account before is not held back by the
    /// account-wide counter: failing on purpose from elsewhere cannot lock its owner out.
    func login(_ request: LoginRequest, from address: String) async throws -> AuthSession {
        let checked = try await checkPassword(request.password, of: request.username, from: address, upgrading: true)
        let token = Token.generate()
        return try await succeed(checked) { transaction in
            try Self.startSession(for: checked.user.id, token: token, in: transaction)
            return AuthSession(
                user: checked.user, token: token.text, eventCursor: try transaction.events.cursor(for: checked.user.id))
        }
    }

    /// A password that passed the login throttle and matched.
    private struct CheckedPassword: Sendable {
        let user: User
        let username: String
        let address: String
        /// Today's hash of the password, when the stored one was made with another cost.
        let upgradedHash: String?
    }

    /// The throttle's check and the password's (``login(_:from:)``): 429 while held back, 401
    /// `INVALID_CREDENTIALS` for an unknown user or a wrong password (as long as a right one).
    private func checkPassword(
        _ password: String, of name: String, from address: String, upgrading: Bool
    ) async throws -> CheckedPassword {
        let username = name.lowercased()
        let keys = throttle.keys(username: username, address: address)
        let known = throttle.knownKey(username: username, address: address)
        let held = try await store.write { transaction -> Int? in
            let now = CallStore.milliseconds(transaction.date)
            let counters = transaction.rateCounters
            let known = try counters.counters([known])[known] != nil
            let found = try counters.lock(keys.map(\.text), at: now)
            let binding = keys.filter { !($0.text.hasPrefix("account:") && known) }
            if let blocked = binding.compactMap({ found[$0.text]?.blockedUntilMS }).max(), blocked > now {
                return Int((Double(blocked - now) / 1000).rounded(.up))
            }
            for key in keys {
                try counters.store(
                    RateLimiter.fail(found[key.text] ?? RateCounter(), key.rule, nowMS: now), for: key.text, at: now)
            }
            try counters.prune(
                before: now - LoginThrottle.quietForgives, keptBefore: now - LoginThrottle.knownForgotten)
            return nil
        }
        if let seconds = held {
            throw APIError(.rateLimited, "too many failed logins: try again in \(seconds) s", retryAfter: seconds)
        }
        let found = try await store.snapshot { try $0.accounts.credentials(forUsername: username) }
        let matches: Bool
        do {
            matches = try await Self.scrypt {
                try await hasher.verify(password, against: found?.passwordHash ?? decoyHash)
            }
        } catch let error as APIError where error.code == .serverBusy {
            // Not checked, so not a failure: the attempt counted above is taken back.
            try await store.write { transaction in
                let now = CallStore.milliseconds(transaction.date)
                let counters = transaction.rateCounters
                let found = try counters.lock(keys.map(\.text), at: now)
                for key in keys {
                    if let entry = found[key.text] {
                        try counters.store(RateLimiter.forgive(entry, key.rule), for: key.text, at: now)
                    }
                }
            }
            throw error
        }
        guard let found, matches else {
            throw APIError(.invalidCredentials, "unknown username or wrong password")
        }
        // A hash made with another cost than today's is replaced while the password is at hand.
        let upgraded = upgrading && hasher.needsRehash(found.passwordHash) ? try? await hasher.hash(password) : nil
        return CheckedPassword(user: found.user, username: username, address: address, upgradedHash: upgraded)
    }

    /// The write after a matching password: the attempt is taken back (the account's counters
    /// reset, the address's by one), the address is remembered as known, an upgraded hash
    /// stored, and `then` runs in the same transaction.
    private func succeed<T: Sendable>(
        _ checked: CheckedPassword, then: @escaping @Sendable (WriteTransaction) throws -> T
    ) async throws -> T {
        let reset = throttle.keysReset(username: checked.username, address: checked.address).map(\.text)
        let addressKey = throttle.keys(username: checked.username, address: checked.address).first {
            $0.text.hasPrefix("address:")
        }
        let known = throttle.knownKey(username: checked.username, address: checked.address)
        return try await store.write { transaction in
            let now = CallStore.milliseconds(transaction.date)
            let counters = transaction.rateCounters
            try counters.clear(reset)
            // The address's counter keeps its other failures: only this attempt is taken back.
            if let addressKey, let entry = try counters.lock([addressKey.text], at: now)[addressKey.text] {
                try counters.store(RateLimiter.forgive(entry, addressKey.rule), for: addressKey.text, at: now)
            }
            try counters.store(RateCounter(), for: known, at: now)
            if let upgraded = checked.upgradedHash {
                try transaction.accounts.setPasswordHash(upgraded, of: checked.user.id)
            }
            return try then(transaction)
        }
    }

    /// Runs scrypt work on the hasher's bounded queue; a full queue is 503 `SERVER_BUSY` with
    /// `Retry-After`, at once.
    private static func scrypt<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let busy as ScryptWorkers.Busy {
            throw APIError(
                .serverBusy, "too many password checks are waiting: try again in \(busy.retryAfterSeconds) s",
                retryAfter: busy.retryAfterSeconds)
        }
    }

    /// Ends the session and unbinds every push device registered under it.
    func logout(_ principal: Principal) async throws {
        _ = try await store.write { transaction in
            try transaction.accounts.endSession(principal.sessionID, at: transaction.timestamp)
            try transaction.devices.removeAll(boundTo: principal.sessionID)
            transaction.wake([principal.user.id])  // its streams end now, on every instance
        }
    }

    /// Ends every session of the user, this one included, and unbinds their push devices.
    func logoutEverywhere(_ principal: Principal) async throws {
        try await store.write { try Self.endSessions(of: principal.user.id, keeping: nil, in: $0) }
    }

    /// Changes the password after checking the current one under the login throttle (a wrong
    /// one is 401 `INVALID_CREDENTIALS` and counts as a failed login), and ends every other
    /// session in the same write.
    func changePassword(_ request: ChangePasswordRequest, by principal: Principal, from address: String) async throws {
        try AccountValidation.password(request.newPassword, field: "newPassword")
        let checked: CheckedPassword
        do {
            checked = try await checkPassword(
                request.currentPassword, of: principal.user.username, from: address, upgrading: false)
        } catch let error as APIError where error.code == .invalidCredentials {
            throw APIError(.invalidCredentials, "the current password is wrong", field: "currentPassword")
        }
        let hash = try await Self.scrypt { try await hasher.hash(request.newPassword) }
        let userID = principal.user.id, sessionID = principal.sessionID
        try await succeed(checked) { transaction in
            try transaction.accounts.setPasswordHash(hash, of: userID)
            try Self.endSessions(of: userID, keeping: sessionID, in: transaction)
        }
    }

    /// Ends the user's sessions but `keeping`, unbinds their push devices, and wakes the user's
    /// held requests on every instance (their streams end).
    private static func endSessions(of userID: String, keeping: String?, in transaction: WriteTransaction) throws {
        for session in try transaction.accounts.endSessions(of: userID, keeping: keeping, at: transaction.timestamp) {
            try transaction.devices.removeAll(boundTo: session)
        }
        transaction.wake([userID])
    }

    func me(_ principal: Principal) async throws -> Me {
        let cursor = try await store.snapshot { try $0.events.cursor(for: principal.user.id) }
        return Me(user: principal.user, eventCursor: cursor)
    }

    private static func startSession(for userID: String, token: Token, in transaction: WriteTransaction) throws {
        try transaction.accounts.startSession(
            id: transaction.newID(), userID: userID, tokenHash: token.hash, at: transaction.timestamp,
            atMS: CallStore.milliseconds(transaction.date))
    }
}

/// `/auth/*` and `/me`.
struct AccountRoutes {
    let service: AccountService
    let authenticator: Authenticator
    /// Proxies whose `X-Forwarded-For` names the client (``ClientAddress``).
    var trustedProxies: Set<String> = []

    func register(in router: inout Router) {
        router.add("POST", "/auth/register", maxBodyBytes: Router.smallBodyBytes) { [service, trustedProxies] context in
            .json(
                try await service.register(
                    try context.decode(RegisterRequest.self),
                    from: ClientAddress.of(context.request, trusting: trustedProxies)), status: 201)
        }
        router.add("POST", "/auth/login", maxBodyBytes: Router.smallBodyBytes) { [service, trustedProxies] context in
            .json(
                try await service.login(
                    try context.decode(LoginRequest.self),
                    from: ClientAddress.of(context.request, trusting: trustedProxies)))
        }
        router.add(
            "POST", "/auth/logout", maxBodyBytes: Router.smallBodyBytes,
            authenticator.require { [service] _, principal in
                try await service.logout(principal)
                return .noContent
            })
        router.add(
            "POST", "/auth/logout-all", maxBodyBytes: Router.smallBodyBytes,
            authenticator.require { [service] _, principal in
                try await service.logoutEverywhere(principal)
                return .noContent
            })
        router.add(
            "POST", "/auth/password", maxBodyBytes: Router.smallBodyBytes,
            authenticator.require { [service, trustedProxies] context, principal in
                try await service.changePassword(
                    try context.decode(ChangePasswordRequest.self), by: principal,
                    from: ClientAddress.of(context.request, trusting: trustedProxies))
                return .noContent
            })
        router.add(
            "GET", "/me",
            authenticator.require { [service] _, principal in
                .json(try await service.me(principal))
            })
    }
}
