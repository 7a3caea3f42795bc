import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardWire

/// Who is calling: the session's user.
public struct Principal: Sendable, Equatable {
    /// The signed-in user.
    public let user: User
    /// The session the bearer token belongs to.
    public let sessionID: String
}

/// A route handler that runs only for a valid session.
public typealias AuthenticatedHandler = @Sendable (RequestContext, Principal) async throws -> HTTPResponse

/// Resolves `Authorization: Bearer <token>` to a live session; tokens are stored only as their
/// SHA-256, so the lookup hashes what the client sent.
public struct Authenticator: Sendable {
    let store: ServerStore

    /// Wraps a handler so it runs only with a valid session; anything else is 401.
    func require(_ handler: @escaping AuthenticatedHandler) -> RouteHandler {
        { context in
            let principal = try await authenticate(context.request.headers)
            return try await handler(context, principal)
        }
    }

    /// The principal for these headers, or a 401 that says what is wrong.
    func authenticate(_ headers: HTTPHeaders) async throws -> Principal {
        guard let header = headers["Authorization"] else {
            throw Self.unauthorized("missing bearer token: send Authorization: Bearer <token>")
        }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer", let token = Token(String(parts[1])) else {
            throw Self.unauthorized("malformed Authorization header: expected Bearer <token>")
        }
        let hash = token.hash
        let principal = try await store.read { connection -> Principal? in
            let rows = try connection.query(
                """
                SELECT s.id AS session_id, u.id, u.username, u.display_name
                FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = ? AND s.ended_at IS NULL
                """,
                [.blob(hash)])
            guard let row = rows.first else { return nil }
            return Principal(
                user: User(id: try row.string("id"), username: try row.string("username"), displayName: try row.string("display_name")),
                sessionID: try row.string("session_id"))
        }
        guard let principal else { throw Self.unauthorized("unknown or ended session") }
        return principal
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "UNAUTHORIZED", message: message)
    }
}

/// A bearer token: 32 random bytes, base64url without padding (43 characters).
struct Token: Sendable, Equatable {
    let text: String

    /// A fresh random token.
    static func generate() -> Token { Token(checked: SecureRandom.token(byteCount: 32)) }

    private init(checked text: String) { self.text = text }

    /// Accepts only the shape the server issues.
    init?(_ text: String) {
        guard text.utf8.count == 43, let bytes = Base64URL.decode(text), bytes.count == 32 else { return nil }
        self.text = text
    }

    /// What the database stores.
    var hash: [UInt8] { SHA256.hash(Array(text.utf8)) }
}
