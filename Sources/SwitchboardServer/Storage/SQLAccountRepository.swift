import SwitchboardStore
import SwitchboardWire

/// ``AccountRepository`` in SQL that SQLite and PostgreSQL both run (tables `users` and `sessions`),
/// working on the connection of one transaction or snapshot.
struct SQLAccountRepository: AccountRepository {
    let connection: any SQLExecutor

    func createUser(_ user: User, passwordHash: String, at timestamp: String) throws -> Bool {
        try connection.run(
            "INSERT INTO users (id, username, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING",
            [.text(user.id), .text(user.username), .text(user.displayName), .text(passwordHash), .text(timestamp)]) > 0
    }

    func credentials(forUsername username: String) throws -> StoredCredentials? {
        try connection.query("SELECT id, username, display_name, password_hash FROM users WHERE username = ?", [.text(username)]).first.map {
            StoredCredentials(user: try Self.user(from: $0), passwordHash: try $0.string("password_hash"))
        }
    }

    func user(id: String) throws -> User? {
        try connection.query("SELECT id, username, display_name FROM users WHERE id = ?", [.text(id)]).first.map { try Self.user(from: $0) }
    }

    func user(username: String) throws -> User? {
        try connection.query("SELECT id, username, display_name FROM users WHERE username = ?", [.text(username)]).first.map { try Self.user(from: $0) }
    }

    func startSession(id: String, userID: String, tokenHash: [UInt8], at timestamp: String) throws {
        try connection.run(
            "INSERT INTO sessions (id, user_id, token_hash, created_at) VALUES (?, ?, ?, ?)",
            [.text(id), .text(userID), .blob(tokenHash), .text(timestamp)])
    }

    func endSession(_ id: String, at timestamp: String) throws {
        try connection.run("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL", [.text(timestamp), .text(id)])
    }

    func principal(forTokenHash tokenHash: [UInt8]) throws -> Principal? {
        try connection.query(
            """
            SELECT s.id AS session_id, u.id, u.username, u.display_name
            FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ? AND s.ended_at IS NULL
            """,
            [.blob(tokenHash)]
        ).first.map { Principal(user: try Self.user(from: $0), sessionID: try $0.string("session_id")) }
    }

    func isSessionLive(_ id: String) throws -> Bool {
        try !connection.query("SELECT 1 FROM sessions WHERE id = ? AND ended_at IS NULL", [.text(id)]).isEmpty
    }

    /// A user from a row with `id`, `username` and `display_name` (each after `prefix`).
    static func user(from row: SQLiteRow, prefix: String = "") throws -> User {
        User(id: try row.string(prefix + "id"), username: try row.string(prefix + "username"), displayName: try row.string(prefix + "display_name"))
    }
}
