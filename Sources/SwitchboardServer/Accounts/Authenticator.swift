import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardWire

/// A route handler that runs only for a valid session.
public typealias AuthenticatedHandler = @Sendable (RequestContext, Principal) async throws -> HTTPResponse

/// Resolves `Authorization: Bearer <token>` to a live session; tokens are stored only as their
/// SHA-256, so the lookup hashes what the client sent.
public struct Authenticator: Sendable {
    let store: ServerStore
    /// A session unused this long ends (ms).
    var idleMS: Int64 = 30 * 86_400_000
    /// A session this old ends, however used (ms).
    var maxAgeMS: Int64 = 365 * 86_400_000
    /// How often a session's last use is written (ms): at most one write per session per minute.
    static let touchIntervalMS: Int64 = 60_000

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
        let token = try Self.token(fromAuthorization: header)
        let hash = token.hash
        let now = CallStore.milliseconds(store.environment.now())
        let startedAfter = now - maxAgeMS, seenAfter = now - idleMS
        let found = try await store.snapshot {
            try $0.accounts.principal(forTokenHash: hash, startedAfterMS: startedAfter, seenAfterMS: seenAfter)
        }
        guard let (principal, seenAt) = found else { throw Self.unauthorized("unknown, ended or expired session") }
        if now - seenAt >= Self.touchIntervalMS {
            let sessionID = principal.sessionID
            try await store.write { try $0.accounts.touchSession(sessionID, at: CallStore.milliseconds($0.date)) }
        }
        return principal
    }

    /// The token in an `Authorization` value, or a 401 saying what was expected and what came.
    static func token(fromAuthorization header: String) throws(APIError) -> Token {
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        let expected =
            "expected Authorization: Bearer <token>, with the 43-character token from /auth/register or /auth/login"
        guard let scheme = parts.first else { throw unauthorized("empty Authorization header: \(expected)") }
        guard scheme.lowercased() == "bearer" else {
            if parts.count == 1, Token(String(scheme)) != nil {
                throw unauthorized("the word Bearer is missing before the token: \(expected)")
            }
            throw unauthorized("Authorization scheme '\(scheme.prefix(20))' is not supported: \(expected)")
        }
        guard parts.count == 2 else {
            throw unauthorized(
                parts.count == 1
                    ? "no token after Bearer: \(expected)" : "more than one token after Bearer: \(expected)")
        }
        let text = String(parts[1])
        if let token = Token(text) { return token }
        let problem: String
        if text.first == "\"" || text.first == "'" || text.last == "\"" || text.last == "'" {
            problem = "the token is quoted; send it without quotes"
        } else if text == "null" || text == "undefined" {
            problem = "the token is '\(text)': the register or login request that should have given it failed"
        } else if text.utf8.count != 43 {
            problem = "the token has \(text.utf8.count) characters, not 43"
        } else {
            problem = "the token has characters outside base64url (A-Z a-z 0-9 - _)"
        }
        throw unauthorized("malformed bearer token: \(problem); \(expected)")
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, message)
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
