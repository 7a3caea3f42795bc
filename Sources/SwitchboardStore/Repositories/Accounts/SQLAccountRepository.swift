import SwitchboardWire

/// ``AccountRepository`` in SQL that SQLite and PostgreSQL both run (tables `users` and `sessions`),
/// working on the connection of one transaction or snapshot.
package struct SQLAccountRepository: AccountRepository {
    package let connection: any SQLExecutor

    package func createUser(_ user: User, passwordHash: String, at timestamp: String) throws -> Bool {
        try connection.run(
            "INSERT INTO users (id, username, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING",
            [.text(user.id), .text(user.username), .text(user.displayName), .text(passwordHash), .text(timestamp)]) > 0
    }

    package func credentials(forUsername username: String) throws -> StoredCredentials? {
        try connection.query(
            "SELECT id, username, display_name, password_hash FROM users WHERE username = ?", [.text(username)]
        ).first.map {
            StoredCredentials(user: try Self.user(from: $0), passwordHash: try $0.string("password_hash"))
        }
    }

    package func user(id: String) throws -> User? {
        try connection.query("SELECT id, username, display_name FROM users WHERE id = ?", [.text(id)]).first.map {
            try Self.user(from: $0)
        }
    }

    package func user(username: String) throws -> User? {
        try connection.query("SELECT id, username, display_name FROM users WHERE username = ?", [.text(username)]).first
            .map { try Self.user(from: $0) }
    }

    package func startSession(
        id: String, userID: String, tokenHash: [UInt8], at timestamp: String, atMS nowMS: Int64
    ) throws {
        try connection.run(
            "INSERT INTO sessions (id, user_id, token_hash, created_at, created_at_ms, seen_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(id), .text(userID), .blob(tokenHash), .text(timestamp), .integer(nowMS), .integer(nowMS)])
    }

    package func endSession(_ id: String, at timestamp: String) throws {
        try connection.run(
            "UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL", [.text(timestamp), .text(id)])
    }

    package func endSessions(of userID: String, keeping: String?, at timestamp: String) throws -> [String] {
        let ids = try connection.query(
            "SELECT id FROM sessions WHERE user_id = ? AND ended_at IS NULL ORDER BY id", [.text(userID)]
        )
        .map { try $0.string("id") }.filter { $0 != keeping }
        for id in ids { try endSession(id, at: timestamp) }
        return ids
    }

    package func principal(
        forTokenHash tokenHash: [UInt8], startedAfterMS: Int64, seenAfterMS: Int64
    ) throws -> (Principal, seenAtMS: Int64)? {
        try connection.query(
            """
            SELECT s.id AS session_id, s.seen_at_ms, u.id, u.username, u.display_name
            FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ? AND s.ended_at IS NULL AND s.created_at_ms > ? AND s.seen_at_ms > ?
            """,
            [.blob(tokenHash), .integer(startedAfterMS), .integer(seenAfterMS)]
        ).first.map {
            (
                Principal(user: try Self.user(from: $0), sessionID: try $0.string("session_id")),
                try $0.int64("seen_at_ms")
            )
        }
    }

    package func touchSession(_ id: String, at nowMS: Int64) throws {
        try connection.run(
            "UPDATE sessions SET seen_at_ms = ? WHERE id = ? AND seen_at_ms < ?",
            [.integer(nowMS), .text(id), .integer(nowMS)])
    }

    package func isSessionLive(_ id: String) throws -> Bool {
        try !connection.query("SELECT 1 FROM sessions WHERE id = ? AND ended_at IS NULL", [.text(id)]).isEmpty
    }

    package func setPasswordHash(_ hash: String, of userID: String) throws {
        try connection.run("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .text(userID)])
    }

    /// A user from a row with `id`, `username` and `display_name` (each after `prefix`).
    package static func user(from row: SQLiteRow, prefix: String = "") throws -> User {
        User(
            id: try row.string(prefix + "id"), username: try row.string(prefix + "username"),
            displayName: try row.string(prefix + "display_name"))
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
