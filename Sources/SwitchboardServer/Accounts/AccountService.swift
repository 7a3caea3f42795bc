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

    func register(_ request: RegisterRequest) async throws -> AuthSession {
        let username = try AccountValidation.username(request.username)
        try AccountValidation.password(request.password)
        let displayName = try AccountValidation.displayName(request.displayName)
        let passwordHash = try await hasher.hash(request.password)
        let token = Token.generate()
        let session = try await store.write { transaction -> AuthSession? in
            let user = User(id: transaction.newID(), username: username, displayName: displayName)
            guard try transaction.accounts.createUser(user, passwordHash: passwordHash, at: transaction.timestamp) else { return nil }
            try Self.startSession(for: user.id, token: token, in: transaction)
            return AuthSession(user: user, token: token.text, eventCursor: 0)
        }
        guard let session else {
            throw APIError(status: 409, code: "USERNAME_TAKEN", message: "the username '\(username)' is taken", field: "username")
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
        let username = request.username.lowercased()
        let throttle = self.throttle
        let keys = throttle.keys(username: username, address: address)
        let known = throttle.knownKey(username: username, address: address)
        let held = try await store.write { transaction -> Int? in
            let now = CallStore.milliseconds(transaction.date)
            let counters = try transaction.loginThrottle.entries(keys.map(\.text) + [known])
            let binding = keys.filter { !($0.text.hasPrefix("account:") && counters[known] != nil) }
            if let blocked = binding.compactMap({ counters[$0.text]?.blockedUntilMS }).max(), blocked > now {
                return Int((Double(blocked - now) / 1000).rounded(.up))
            }
            for key in keys {
                let failures = (counters[key.text]?.failures ?? 0) + 1
                let wait = Int64(key.rule.delay(afterFailures: failures) * 1000)
                try transaction.loginThrottle.store(LoginThrottleEntry(failures: failures, blockedUntilMS: now + wait), for: key.text, at: now)
            }
            try transaction.loginThrottle.prune(before: now - LoginThrottle.quietForgives, knownBefore: now - LoginThrottle.knownForgotten)
            return nil
        }
        if let seconds = held {
            throw APIError(status: 429, code: "RATE_LIMITED", message: "too many failed logins: try again in \(seconds) s", retryAfter: seconds)
        }
        let found = try await store.snapshot { try $0.accounts.credentials(forUsername: username) }
        let matches = try await hasher.verify(request.password, against: found?.passwordHash ?? decoyHash)
        guard let user = found?.user, matches else {
            throw APIError(status: 401, code: "INVALID_CREDENTIALS", message: "unknown username or wrong password")
        }
        let token = Token.generate()
        let reset = throttle.keysReset(username: username, address: address).map(\.text)
        let addressKey = keys.first { $0.text.hasPrefix("address:") }
        return try await store.write { transaction in
            let now = CallStore.milliseconds(transaction.date)
            try transaction.loginThrottle.clear(reset)
            // The address's counter keeps its other failures: only this attempt is taken back.
            if let addressKey, let entry = try transaction.loginThrottle.entries([addressKey.text])[addressKey.text] {
                let failures = max(0, entry.failures - 1)
                let blocked = addressKey.rule.delay(afterFailures: failures) > 0 ? entry.blockedUntilMS : 0
                try transaction.loginThrottle.store(LoginThrottleEntry(failures: failures, blockedUntilMS: blocked), for: addressKey.text, at: now)
            }
            try transaction.loginThrottle.store(LoginThrottleEntry(failures: 0, blockedUntilMS: 0), for: known, at: now)
            try Self.startSession(for: user.id, token: token, in: transaction)
            let cursor = try transaction.events.cursor(for: user.id)
            return AuthSession(user: user, token: token.text, eventCursor: cursor)
        }
    }

    /// Ends the session and unbinds every push device registered under it.
    func logout(_ principal: Principal) async throws {
        _ = try await store.write { transaction in
            try transaction.accounts.endSession(principal.sessionID, at: transaction.timestamp)
            try transaction.devices.removeAll(boundTo: principal.sessionID)
        }
    }

    func me(_ principal: Principal) async throws -> Me {
        let cursor = try await store.snapshot { try $0.events.cursor(for: principal.user.id) }
        return Me(user: principal.user, eventCursor: cursor)
    }

    private static func startSession(for userID: String, token: Token, in transaction: WriteTransaction) throws {
        try transaction.accounts.startSession(id: transaction.newID(), userID: userID, tokenHash: token.hash, at: transaction.timestamp)
    }
}

/// `/auth/*` and `/me`.
struct AccountRoutes {
    let service: AccountService
    let authenticator: Authenticator
    /// Proxies whose `X-Forwarded-For` names the client (``ClientAddress``).
    var trustedProxies: Set<String> = []

    func register(in router: inout Router) {
        router.add("POST", "/auth/register") { [service] context in
            .json(try await service.register(try context.decode(RegisterRequest.self)), status: 201)
        }
        router.add("POST", "/auth/login") { [service, trustedProxies] context in
            .json(try await service.login(
                try context.decode(LoginRequest.self), from: ClientAddress.of(context.request, trusting: trustedProxies)))
        }
        router.add("POST", "/auth/logout", authenticator.require { [service] _, principal in
            try await service.logout(principal)
            return .noContent
        })
        router.add("GET", "/me", authenticator.require { [service] _, principal in
            .json(try await service.me(principal))
        })
    }
}
