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
        do {
            return try await store.write { transaction in
                let user = User(id: transaction.newID(), username: username, displayName: displayName)
                try transaction.connection.run(
                    "INSERT INTO users (id, username, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                    [.text(user.id), .text(username), .text(displayName), .text(passwordHash), .text(transaction.timestamp)])
                try Self.startSession(for: user.id, token: token, in: transaction)
                return AuthSession(user: user, token: token.text, eventCursor: 0)
            }
        } catch let error as StoreError where error.constraint == .unique && error.message.contains("users.username") {
            throw APIError(status: 409, code: "USERNAME_TAKEN", message: "the username '\(username)' is taken", field: "username")
        }
    }

    func login(_ request: LoginRequest) async throws -> AuthSession {
        let username = request.username.lowercased()
        let found = try await store.read { connection -> (User, String)? in
            let rows = try connection.query(
                "SELECT id, username, display_name, password_hash FROM users WHERE username = ?", [.text(username)])
            guard let row = rows.first else { return nil }
            return (User(id: try row.string("id"), username: try row.string("username"), displayName: try row.string("display_name")),
                    try row.string("password_hash"))
        }
        let matches = try await hasher.verify(request.password, against: found?.1 ?? decoyHash)
        guard let user = found?.0, matches else {
            throw APIError(status: 401, code: "INVALID_CREDENTIALS", message: "unknown username or wrong password")
        }
        let token = Token.generate()
        return try await store.write { transaction in
            try Self.startSession(for: user.id, token: token, in: transaction)
            let cursor = try EventFeed.cursor(for: user.id, in: transaction.connection)
            return AuthSession(user: user, token: token.text, eventCursor: cursor)
        }
    }

    /// Ends the session and unbinds every push device registered under it.
    func logout(_ principal: Principal) async throws {
        _ = try await store.write { transaction in
            try transaction.connection.run(
                "UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
                [.text(transaction.timestamp), .text(principal.sessionID)])
            try transaction.devices.removeAll(boundTo: principal.sessionID)
        }
    }

    func me(_ principal: Principal) async throws -> Me {
        let cursor = try await store.read { try EventFeed.cursor(for: principal.user.id, in: $0) }
        return Me(user: principal.user, eventCursor: cursor)
    }

    private static func startSession(for userID: String, token: Token, in transaction: WriteTransaction) throws {
        try transaction.connection.run(
            "INSERT INTO sessions (id, user_id, token_hash, created_at) VALUES (?, ?, ?, ?)",
            [.text(transaction.newID()), .text(userID), .blob(token.hash), .text(transaction.timestamp)])
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
