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
        Migration(version: 2, name: "accounts_social_events", sql: accountsSocialEvents),
    ]

    /// Users, sessions, the social graph, messages and the event feed.
    ///
    /// Timestamps are ISO-8601 UTC text with milliseconds, so they sort as text. Ids are UUID
    /// text except event ids, which come from one AUTOINCREMENT sequence: never reused, even
    /// after pruning, and strictly increasing across all users.
    static let accountsSocialEvents = """
        CREATE TABLE users (
            id TEXT PRIMARY KEY NOT NULL,
            username TEXT NOT NULL UNIQUE,
            display_name TEXT NOT NULL,
            password_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            -- The newest event id of this user that retention deleted; a cursor below it is expired.
            events_pruned_through INTEGER NOT NULL DEFAULT 0
        ) STRICT;

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id),
            token_hash BLOB NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            ended_at TEXT
        ) STRICT;
        CREATE INDEX sessions_by_user ON sessions(user_id);

        CREATE TABLE friend_requests (
            id TEXT PRIMARY KEY NOT NULL,
            from_user TEXT NOT NULL REFERENCES users(id),
            to_user TEXT NOT NULL REFERENCES users(id),
            state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'declined', 'cancelled')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        ) STRICT;
        -- At most one pending request per ordered pair.
        CREATE UNIQUE INDEX friend_requests_pending ON friend_requests(from_user, to_user) WHERE state = 'pending';
        CREATE INDEX friend_requests_to ON friend_requests(to_user, state);

        -- One row per pair, smaller id first; the pair's conversation outlives an unfriending
        -- so the history is there again if they become friends again.
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY NOT NULL,
            user_a TEXT NOT NULL REFERENCES users(id),
            user_b TEXT NOT NULL REFERENCES users(id),
            created_at TEXT NOT NULL,
            CHECK (user_a < user_b),
            UNIQUE (user_a, user_b)
        ) STRICT;

        CREATE TABLE friendships (
            user_a TEXT NOT NULL REFERENCES users(id),
            user_b TEXT NOT NULL REFERENCES users(id),
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            created_at TEXT NOT NULL,
            PRIMARY KEY (user_a, user_b),
            CHECK (user_a < user_b)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE blocks (
            blocker TEXT NOT NULL REFERENCES users(id),
            blocked TEXT NOT NULL REFERENCES users(id),
            created_at TEXT NOT NULL,
            PRIMARY KEY (blocker, blocked)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE groups (
            id TEXT PRIMARY KEY NOT NULL,
            name TEXT NOT NULL,
            owner_id TEXT NOT NULL REFERENCES users(id),
            created_at TEXT NOT NULL,
            dissolved_at TEXT
        ) STRICT;

        CREATE TABLE group_members (
            group_id TEXT NOT NULL REFERENCES groups(id),
            user_id TEXT NOT NULL REFERENCES users(id),
            joined_at TEXT NOT NULL,
            PRIMARY KEY (group_id, user_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX group_members_by_user ON group_members(user_id);

        -- Exactly one of conversation_id and group_id is set. seq orders messages within the
        -- whole table (and so within each scope) without relying on clocks.
        CREATE TABLE messages (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            conversation_id TEXT REFERENCES conversations(id),
            group_id TEXT REFERENCES groups(id),
            sender_id TEXT NOT NULL REFERENCES users(id),
            client_id TEXT,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL,
            CHECK ((conversation_id IS NULL) != (group_id IS NULL))
        ) STRICT;
        CREATE INDEX messages_by_conversation ON messages(conversation_id, seq) WHERE conversation_id IS NOT NULL;
        CREATE INDEX messages_by_group ON messages(group_id, seq) WHERE group_id IS NOT NULL;
        CREATE UNIQUE INDEX messages_client_id ON messages(sender_id, client_id) WHERE client_id IS NOT NULL;

        -- A user's read position in one conversation or group: the newest message read.
        CREATE TABLE read_markers (
            scope_id TEXT NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id),
            message_seq INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (scope_id, user_id)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            conversation_id TEXT,
            group_id TEXT,
            message_id TEXT,
            call_id TEXT,
            created_at TEXT NOT NULL
        ) STRICT;
        CREATE INDEX events_by_user ON events(user_id, id);
        CREATE INDEX events_by_time ON events(created_at);
        """
}
