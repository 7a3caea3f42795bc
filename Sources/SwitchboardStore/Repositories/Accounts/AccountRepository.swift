import SwitchboardWire

/// A user's sign-in data: who they are and their password hash.
public struct StoredCredentials: Sendable, Equatable {
    public let user: User
    public let passwordHash: String

    package init(user: User, passwordHash: String) {
        self.user = user
        self.passwordHash = passwordHash
    }
}

/// Accounts and their sessions. A session is found by its token's hash (the token itself is
/// never stored) and lives until it ends. SQLite implements it today
/// (``SQLAccountRepository``); the contract suite tests every implementation.
public protocol AccountRepository {
    /// Creates the user; false (and nothing written) when the username is taken.
    func createUser(_ user: User, passwordHash: String, at timestamp: String) throws -> Bool
    func credentials(forUsername username: String) throws -> StoredCredentials?
    func user(id: String) throws -> User?
    /// The user with this (lowercase) username.
    func user(username: String) throws -> User?
    func startSession(id: String, userID: String, tokenHash: [UInt8], at timestamp: String, atMS nowMS: Int64) throws
    /// Ends the session (an ended one stays as it ended).
    func endSession(_ id: String, at timestamp: String) throws
    /// Ends every live session of `userID` but `keeping` (all of them without one); their ids.
    func endSessions(of userID: String, keeping: String?, at timestamp: String) throws -> [String]
    /// The live session whose token hashes to `tokenHash`, and its user, unless it expired:
    /// started before `startedAfterMS` or last used before `seenAfterMS`; with when it was
    /// last used (ms).
    func principal(
        forTokenHash tokenHash: [UInt8], startedAfterMS: Int64, seenAfterMS: Int64
    ) throws -> (Principal, seenAtMS: Int64)?
    /// Records that the session was used at `nowMS`.
    func touchSession(_ id: String, at nowMS: Int64) throws
    func isSessionLive(_ id: String) throws -> Bool
    /// Replaces the user's password hash (a password change, or a hash upgraded to today's cost).
    func setPasswordHash(_ hash: String, of userID: String) throws
}

/// Who is calling: the session's user.
public struct Principal: Sendable, Equatable {
    /// The signed-in user.
    public let user: User
    /// The session the bearer token belongs to.
    public let sessionID: String

    public init(user: User, sessionID: String) {
        self.user = user
        self.sessionID = sessionID
    }
}
