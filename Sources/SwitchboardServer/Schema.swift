import SwitchboardStore

/// The server's database schema, as ordered migrations. Never edit a released migration;
/// add a new one.
public enum Schema {
    /// Every migration, in version order.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "server_state", sql: """
            CREATE TABLE server_state (
                key TEXT PRIMARY KEY NOT NULL,
                value TEXT NOT NULL
            ) STRICT;
            INSERT INTO server_state (key, value) VALUES ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
            """),
    ]
}
