/// The longer table definitions of ``Schema``'s migrations (SQLite's dialect), kept apart from
/// the list of migrations.
extension Schema {
    /// A device holds one token per channel (a phone's VoIP and alert tokens; an Android phone's
    /// FCM token and its maker's), each bound to the session that registered it. The table is
    /// rebuilt: its key becomes (device, channel), `platform` is now `ios` or `android`, the
    /// old `platform` values (all `ios-voip`) become the channel, and `environment` is empty for
    /// channels without one.
    package static let pushDeviceTokens = """
        CREATE TABLE push_devices_v8 (
            device_id TEXT NOT NULL,
            channel TEXT NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            platform TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
            brand TEXT,
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production', '')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            -- BadDeviceToken / DeviceTokenNotForTopic answers seen for this token.
            suspect_reports INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (device_id, channel)
        ) STRICT;
        INSERT INTO push_devices_v8 (device_id, channel, user_id, session_id, platform, brand, token, environment, created_at,
            updated_at, suspect_reports)
        SELECT device_id, platform, user_id, session_id, 'ios', NULL, token, environment, created_at, updated_at, suspect_reports
        FROM push_devices ORDER BY rowid;
        DROP TABLE push_devices;
        ALTER TABLE push_devices_v8 RENAME TO push_devices;
        CREATE UNIQUE INDEX push_devices_token ON push_devices(channel, token);
        CREATE INDEX push_devices_by_user ON push_devices(user_id);
        CREATE INDEX push_devices_by_session ON push_devices(session_id);
        """

    /// Push devices and the push outbox. A job is written in the same transaction as the
    /// transition that started the ring; its id is also its `apns-id`, the same on every retry.
    package static let push = """
        CREATE TABLE push_devices (
            device_id TEXT PRIMARY KEY NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            platform TEXT NOT NULL,
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            -- BadDeviceToken / DeviceTokenNotForTopic answers seen for this token.
            suspect_reports INTEGER NOT NULL DEFAULT 0
        ) STRICT;
        CREATE UNIQUE INDEX push_devices_token ON push_devices(platform, token);
        CREATE INDEX push_devices_by_user ON push_devices(user_id);
        CREATE INDEX push_devices_by_session ON push_devices(session_id);

        CREATE TABLE push_jobs (
            id TEXT PRIMARY KEY NOT NULL,
            call_id TEXT NOT NULL REFERENCES calls(id),
            user_id TEXT NOT NULL REFERENCES users(id),
            device_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            token TEXT NOT NULL,
            environment TEXT NOT NULL,
            payload TEXT NOT NULL,
            headers TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dropped', 'expired', 'failed')),
            reason TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at_ms INTEGER NOT NULL,
            next_attempt_at_ms INTEGER NOT NULL,
            expires_at_ms INTEGER NOT NULL,
            finished_at_ms INTEGER,
            claimed_until_ms INTEGER
        ) STRICT;
        CREATE INDEX push_jobs_due ON push_jobs(next_attempt_at_ms) WHERE state = 'pending';
        CREATE INDEX push_jobs_finished ON push_jobs(state, finished_at_ms);
        """

    /// Calls. Times here are integer milliseconds since 1970 (timers compare them exactly);
    /// the API formats them as ISO-8601.
    package static let calls = """
        CREATE TABLE calls (
            id TEXT PRIMARY KEY NOT NULL,
            scope_kind TEXT NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
            scope_id TEXT NOT NULL,
            mode TEXT NOT NULL CHECK (mode IN ('audio', 'video')),
            state TEXT NOT NULL CHECK (state IN ('ringing', 'active', 'ended')),
            end_reason TEXT,
            created_by TEXT NOT NULL REFERENCES users(id),
            client_id TEXT NOT NULL,
            created_at_ms INTEGER NOT NULL,
            answered_at_ms INTEGER,
            ended_at_ms INTEGER,
            ring_deadline_ms INTEGER NOT NULL,
            room_name TEXT NOT NULL,
            empty_since_ms INTEGER,
            -- Bumped by every transition: a transition computed from an older version retries.
            version INTEGER NOT NULL DEFAULT 1
        ) STRICT;
        -- At most one ringing or active call per scope.
        CREATE UNIQUE INDEX calls_live_per_scope ON calls(scope_kind, scope_id) WHERE state != 'ended';
        CREATE UNIQUE INDEX calls_by_client_id ON calls(created_by, client_id);
        CREATE INDEX calls_ringing_deadline ON calls(ring_deadline_ms) WHERE state != 'ended';
        CREATE INDEX calls_history ON calls(scope_kind, scope_id, ended_at_ms) WHERE state = 'ended';
        CREATE INDEX calls_active ON calls(state) WHERE state = 'active';

        CREATE TABLE call_invitations (
            call_id TEXT NOT NULL REFERENCES calls(id),
            user_id TEXT NOT NULL REFERENCES users(id),
            state TEXT NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            PRIMARY KEY (call_id, user_id)
        ) STRICT;  -- rowid keeps the invitation order
        CREATE INDEX call_invitations_by_user ON call_invitations(user_id, state);

        CREATE TABLE call_participants (
            call_id TEXT NOT NULL REFERENCES calls(id),
            user_id TEXT NOT NULL REFERENCES users(id),
            joined_at_ms INTEGER NOT NULL,
            left_at_ms INTEGER,
            PRIMARY KEY (call_id, user_id)
        ) STRICT;  -- rowid keeps the joining order
        CREATE INDEX call_participants_by_user ON call_participants(user_id);

        -- Who is in a ringing or active call right now (the caller of a ringing call, the
        -- present participants of an active one). The primary key makes "a user is in at most
        -- one call" a database invariant, not a check that two requests could both pass.
        CREATE TABLE call_occupants (
            user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id),
            call_id TEXT NOT NULL REFERENCES calls(id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX call_occupants_by_call ON call_occupants(call_id);
        """

    /// Users, sessions, the social graph, messages and the event feed.
    ///
    /// Timestamps are ISO-8601 UTC text with milliseconds, so they sort as text. Ids are UUID
    /// text except event ids, which come from one AUTOINCREMENT sequence: never reused, even
    /// after pruning, and strictly increasing across all users.
    package static let accountsSocialEvents = """
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

    static let outboxJobsWebhooks = """
        CREATE TABLE outbox_jobs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('media', 'webhook')),
            queue TEXT NOT NULL,
            target TEXT NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'dead')),
            attempts INTEGER NOT NULL,
            next_attempt_ms INTEGER NOT NULL,
            created_at_ms INTEGER NOT NULL,
            give_up_at_ms INTEGER,
            claimed_by TEXT,
            finished_at_ms INTEGER,
            last_status INTEGER,
            last_latency_ms INTEGER,
            last_error TEXT
        ) STRICT;
        CREATE INDEX outbox_jobs_due ON outbox_jobs(next_attempt_ms) WHERE state = 'pending';
        CREATE INDEX outbox_jobs_queue ON outbox_jobs(queue, seq) WHERE state = 'pending';
        CREATE INDEX outbox_jobs_by_target ON outbox_jobs(kind, target, seq);
        CREATE INDEX outbox_jobs_finished ON outbox_jobs(finished_at_ms) WHERE state != 'pending';
        CREATE TABLE outbox_attempts (
            job_id TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            status INTEGER,
            latency_ms INTEGER NOT NULL,
            error TEXT
        ) STRICT;
        CREATE INDEX outbox_attempts_by_job ON outbox_attempts(job_id, at_ms);
        INSERT INTO outbox_jobs (id, kind, queue, target, payload, state, attempts, next_attempt_ms, created_at_ms, last_error)
            SELECT id, 'media', 'media:' || call_id, room,
                json_object('callId', call_id, 'action', action, 'room', room, 'identity', identity), 'pending',
                attempts, next_attempt_ms, created_at_ms, last_error
            FROM media_jobs ORDER BY created_at_ms, id;
        DROP TABLE media_jobs;
        CREATE TABLE webhook_endpoints (
            id TEXT PRIMARY KEY NOT NULL,
            url TEXT NOT NULL,
            events TEXT NOT NULL,
            enabled INTEGER NOT NULL,
            secrets TEXT NOT NULL,
            description TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        ) STRICT;
        ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'text' CHECK (kind IN ('text', 'call'));
        ALTER TABLE messages ADD COLUMN call_id TEXT;
        ALTER TABLE messages ADD COLUMN call_details TEXT;
        CREATE UNIQUE INDEX messages_by_call ON messages(call_id) WHERE call_id IS NOT NULL;
        """
}
