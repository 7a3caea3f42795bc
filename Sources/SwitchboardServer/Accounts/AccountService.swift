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

    init(store: ServerStore, hasher: PasswordHasher) throws {
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

    func login(_ request: LoginRequest) async throws -> AuthSession {
        let username = request.username.lowercased()
        let found = try await store.snapshot { try $0.accounts.credentials(forUsername: username) }
        let matches = try await hasher.verify(request.password, against: found?.passwordHash ?? decoyHash)
        guard let user = found?.user, matches else {
            throw APIError(status: 401, code: "INVALID_CREDENTIALS", message: "unknown username or wrong password")
        }
        let token = Token.generate()
        return try await store.write { transaction in
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

    func register(in router: inout Router) {
        router.add("POST", "/auth/register") { [service] context in
            .json(try await service.register(try context.decode(RegisterRequest.self)), status: 201)
        }
        router.add("POST", "/auth/login") { [service] context in
            .json(try await service.login(try context.decode(LoginRequest.self)))
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
