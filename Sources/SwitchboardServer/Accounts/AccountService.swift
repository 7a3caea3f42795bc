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
    /// `Retry-After`; ``LoginThrottle``). The password is not even checked then.
    func login(_ request: LoginRequest, from address: String) async throws -> AuthSession {
        let username = request.username.lowercased()
        let keys = throttle.keys(username: username, address: address)
        let (found, counters) = try await store.snapshot { snapshot in
            (try snapshot.accounts.credentials(forUsername: username), try snapshot.loginThrottle.entries(keys.map(\.text)))
        }
        let nowMS = CallStore.milliseconds(store.environment.now())
        if let blocked = counters.values.map(\.blockedUntilMS).max(), blocked > nowMS {
            let seconds = Int(((Double(blocked - nowMS)) / 1000).rounded(.up))
            throw APIError(
                status: 429, code: "RATE_LIMITED", message: "too many failed logins: try again in \(seconds) s", retryAfter: seconds)
        }
        let matches = try await hasher.verify(request.password, against: found?.passwordHash ?? decoyHash)
        guard let user = found?.user, matches else {
            try await recordFailure(keys)
            throw APIError(status: 401, code: "INVALID_CREDENTIALS", message: "unknown username or wrong password")
        }
        let token = Token.generate()
        let reset = throttle.keysReset(username: username, address: address).map(\.text).filter { counters[$0] != nil }
        return try await store.write { transaction in
            if !reset.isEmpty { try transaction.loginThrottle.clear(reset) }
            try Self.startSession(for: user.id, token: token, in: transaction)
            let cursor = try transaction.events.cursor(for: user.id)
            return AuthSession(user: user, token: token.text, eventCursor: cursor)
        }
    }

    /// Counts a failed login against each of `keys` (read again in the write: other instances
    /// count too) and sets each one's wait.
    private func recordFailure(_ keys: [LoginThrottle.Key]) async throws {
        _ = try await store.write { transaction in
            let now = CallStore.milliseconds(transaction.date)
            let counters = try transaction.loginThrottle.entries(keys.map(\.text))
            for key in keys {
                let failures = (counters[key.text]?.failures ?? 0) + 1
                let wait = Int64(key.rule.delay(afterFailures: failures) * 1000)
                try transaction.loginThrottle.store(LoginThrottleEntry(failures: failures, blockedUntilMS: now + wait), for: key.text, at: now)
            }
            try transaction.loginThrottle.prune(before: now - LoginThrottle.quietForgives)
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
