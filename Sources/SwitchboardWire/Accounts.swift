/// A user as every API answer shows one.
public struct User: Codable, Sendable, Equatable, Hashable {
    /// The user's id (a UUID string).
    public var id: String
    /// The unique login name, lowercase.
    public var username: String
    /// The name shown to others.
    public var displayName: String

    /// Creates a user value.
    public init(id: String, username: String, displayName: String) {
        self.id = id
        self.username = username
        self.displayName = displayName
    }
}

/// `POST /auth/register` body.
public struct RegisterRequest: Codable, Sendable, Equatable {
    /// 3–32 characters: lowercase letters, digits, `.`, `_` or `-` (matched case-insensitively).
    public var username: String
    /// 8–128 characters.
    public var password: String
    /// 1–64 characters, no control characters.
    public var displayName: String

    /// Creates the request.
    public init(username: String, password: String, displayName: String) {
        self.username = username
        self.password = password
        self.displayName = displayName
    }
}

/// `POST /auth/login` body.
public struct LoginRequest: Codable, Sendable, Equatable {
    /// The username (any case).
    public var username: String
    /// The password.
    public var password: String

    /// Creates the request.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// `POST /auth/password`: a new password, after the current one; every other session ends.
public struct ChangePasswordRequest: Codable, Sendable, Equatable {
    /// The password now.
    public var currentPassword: String
    /// The password from now on (8 to 128 characters, as at registration).
    public var newPassword: String

    /// Creates the request.
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

/// The answer to register and login: the user, a bearer token, and the event cursor to start
/// consuming events after (having taken a snapshot first).
public struct AuthSession: Codable, Sendable, Equatable {
    /// The signed-in user.
    public var user: User
    /// The bearer token for `Authorization: Bearer …`; shown once, stored only as a hash.
    public var token: String
    /// The id of the user's newest event.
    public var eventCursor: Int64

    /// Creates the value.
    public init(user: User, token: String, eventCursor: Int64) {
        self.user = user
        self.token = token
        self.eventCursor = eventCursor
    }
}

/// The answer to `GET /me`.
public struct Me: Codable, Sendable, Equatable {
    /// The signed-in user.
    public var user: User
    /// The id of the user's newest event.
    public var eventCursor: Int64

    /// Creates the value.
    public init(user: User, eventCursor: Int64) {
        self.user = user
        self.eventCursor = eventCursor
    }
}
