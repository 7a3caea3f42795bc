
// The longer migrations' SQL, by name (PostgreSQL's dialect of Schema+Tables.swift).
extension PostgresSchema {
    /// ``Schema/pushDeviceTokens`` in place: the key becomes (device, channel).
    static let pushDeviceTokens = """
        ALTER TABLE push_devices RENAME COLUMN platform TO channel;
        ALTER TABLE push_devices ADD COLUMN platform TEXT COLLATE "C" NOT NULL DEFAULT 'ios' CHECK (platform IN ('ios', 'android'));
        ALTER TABLE push_devices ALTER COLUMN platform DROP DEFAULT;
        ALTER TABLE push_devices ADD COLUMN brand TEXT COLLATE "C";
        ALTER TABLE push_devices DROP CONSTRAINT push_devices_environment_check;
        ALTER TABLE push_devices ADD CONSTRAINT push_devices_environment_check CHECK (environment IN ('sandbox', 'production', ''));
        ALTER TABLE push_devices DROP CONSTRAINT push_devices_pkey;
        ALTER TABLE push_devices ADD PRIMARY KEY (device_id, channel);
        DROP INDEX push_devices_token;
        CREATE UNIQUE INDEX push_devices_token ON push_devices(channel, token);
        """

    static let accountsSocialEvents = """
        CREATE TABLE users (
            id TEXT COLLATE "C" PRIMARY KEY,
            username TEXT COLLATE "C" NOT NULL UNIQUE,
            display_name TEXT COLLATE "C" NOT NULL,
            password_hash TEXT COLLATE "C" NOT NULL,
            created_at TEXT COLLATE "C" NOT NULL,
            events_pruned_through BIGINT NOT NULL DEFAULT 0
        );

        CREATE TABLE sessions (
            id TEXT COLLATE "C" PRIMARY KEY,
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            token_hash BYTEA NOT NULL UNIQUE,
            created_at TEXT COLLATE "C" NOT NULL,
            ended_at TEXT COLLATE "C"
        );
        CREATE INDEX sessions_by_user ON sessions(user_id);

        CREATE TABLE friend_requests (
            id TEXT COLLATE "C" PRIMARY KEY,
            from_user TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            to_user TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'accepted', 'declined', 'cancelled')),
            created_at TEXT COLLATE "C" NOT NULL,
            updated_at TEXT COLLATE "C" NOT NULL
        );
        CREATE UNIQUE INDEX friend_requests_pending ON friend_requests(from_user, to_user) WHERE state = 'pending';
        CREATE INDEX friend_requests_to ON friend_requests(to_user, state);

        CREATE TABLE conversations (
            id TEXT COLLATE "C" PRIMARY KEY,
            user_a TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            user_b TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            created_at TEXT COLLATE "C" NOT NULL,
            CHECK (user_a < user_b),
            UNIQUE (user_a, user_b)
        );

        CREATE TABLE friendships (
            user_a TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            user_b TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations(id),
            created_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (user_a, user_b),
            CHECK (user_a < user_b)
        );

        CREATE TABLE blocks (
            blocker TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            blocked TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            created_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (blocker, blocked)
        );

        CREATE TABLE groups (
            id TEXT COLLATE "C" PRIMARY KEY,
            name TEXT COLLATE "C" NOT NULL,
            owner_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            created_at TEXT COLLATE "C" NOT NULL,
            dissolved_at TEXT COLLATE "C"
        );

        CREATE TABLE group_members (
            group_id TEXT COLLATE "C" NOT NULL REFERENCES groups(id),
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            joined_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (group_id, user_id)
        );
        CREATE INDEX group_members_by_user ON group_members(user_id);

        CREATE TABLE messages (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT COLLATE "C" NOT NULL UNIQUE,
            conversation_id TEXT COLLATE "C" REFERENCES conversations(id),
            group_id TEXT COLLATE "C" REFERENCES groups(id),
            sender_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            client_id TEXT COLLATE "C",
            body TEXT COLLATE "C" NOT NULL,
            created_at TEXT COLLATE "C" NOT NULL,
            CHECK ((conversation_id IS NULL) != (group_id IS NULL))
        );
        CREATE INDEX messages_by_conversation ON messages(conversation_id, seq) WHERE conversation_id IS NOT NULL;
        CREATE INDEX messages_by_group ON messages(group_id, seq) WHERE group_id IS NOT NULL;
        CREATE UNIQUE INDEX messages_client_id ON messages(sender_id, client_id) WHERE client_id IS NOT NULL;

        CREATE TABLE read_markers (
            scope_id TEXT COLLATE "C" NOT NULL,
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            message_seq BIGINT NOT NULL,
            updated_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (scope_id, user_id)
        );

        -- One sequence for every user's events; write transactions commit one at a time
        -- (PostgresDatabase), so ids become visible in id order.
        CREATE TABLE events (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id TEXT COLLATE "C" NOT NULL,
            kind TEXT COLLATE "C" NOT NULL,
            conversation_id TEXT COLLATE "C",
            group_id TEXT COLLATE "C",
            message_id TEXT COLLATE "C",
            call_id TEXT COLLATE "C",
            created_at TEXT COLLATE "C" NOT NULL
        );
        CREATE INDEX events_by_user ON events(user_id, id);
        CREATE INDEX events_by_time ON events(created_at);
        """

    static let calls = """
        CREATE TABLE calls (
            id TEXT COLLATE "C" PRIMARY KEY,
            scope_kind TEXT COLLATE "C" NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
            scope_id TEXT COLLATE "C" NOT NULL,
            mode TEXT COLLATE "C" NOT NULL CHECK (mode IN ('audio', 'video')),
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('ringing', 'active', 'ended')),
            end_reason TEXT COLLATE "C",
            created_by TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            client_id TEXT COLLATE "C" NOT NULL,
            created_at_ms BIGINT NOT NULL,
            answered_at_ms BIGINT,
            ended_at_ms BIGINT,
            ring_deadline_ms BIGINT NOT NULL,
            room_name TEXT COLLATE "C" NOT NULL,
            empty_since_ms BIGINT,
            version BIGINT NOT NULL DEFAULT 1
        );
        CREATE UNIQUE INDEX calls_live_per_scope ON calls(scope_kind, scope_id) WHERE state != 'ended';
        CREATE UNIQUE INDEX calls_by_client_id ON calls(created_by, client_id);
        CREATE INDEX calls_ringing_deadline ON calls(ring_deadline_ms) WHERE state != 'ended';
        CREATE INDEX calls_history ON calls(scope_kind, scope_id, ended_at_ms) WHERE state = 'ended';
        CREATE INDEX calls_active ON calls(state) WHERE state = 'active';

        CREATE TABLE call_invitations (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            call_id TEXT COLLATE "C" NOT NULL REFERENCES calls(id),
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            state TEXT COLLATE "C" NOT NULL,
            updated_at_ms BIGINT NOT NULL,
            PRIMARY KEY (call_id, user_id)
        );
        CREATE INDEX call_invitations_by_user ON call_invitations(user_id, state);

        CREATE TABLE call_participants (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            call_id TEXT COLLATE "C" NOT NULL REFERENCES calls(id),
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            joined_at_ms BIGINT NOT NULL,
            left_at_ms BIGINT,
            PRIMARY KEY (call_id, user_id)
        );
        CREATE INDEX call_participants_by_user ON call_participants(user_id);

        CREATE TABLE call_occupants (
            user_id TEXT COLLATE "C" PRIMARY KEY REFERENCES users(id),
            call_id TEXT COLLATE "C" NOT NULL REFERENCES calls(id)
        );
        CREATE INDEX call_occupants_by_call ON call_occupants(call_id);
        """

    static let push = """
        CREATE TABLE push_devices (
            device_id TEXT COLLATE "C" PRIMARY KEY,
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
            platform TEXT COLLATE "C" NOT NULL,
            token TEXT COLLATE "C" NOT NULL,
            environment TEXT COLLATE "C" NOT NULL CHECK (environment IN ('sandbox', 'production')),
            created_at TEXT COLLATE "C" NOT NULL,
            updated_at TEXT COLLATE "C" NOT NULL,
            suspect_reports BIGINT NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX push_devices_token ON push_devices(platform, token);
        CREATE INDEX push_devices_by_user ON push_devices(user_id);
        CREATE INDEX push_devices_by_session ON push_devices(session_id);

        CREATE TABLE push_jobs (
            id TEXT COLLATE "C" PRIMARY KEY,
            call_id TEXT COLLATE "C" NOT NULL REFERENCES calls(id),
            user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
            device_id TEXT COLLATE "C" NOT NULL,
            provider TEXT COLLATE "C" NOT NULL,
            token TEXT COLLATE "C" NOT NULL,
            environment TEXT COLLATE "C" NOT NULL,
            payload TEXT COLLATE "C" NOT NULL,
            headers TEXT COLLATE "C" NOT NULL,
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'delivered', 'dropped', 'expired', 'failed')),
            reason TEXT COLLATE "C",
            attempts BIGINT NOT NULL DEFAULT 0,
            created_at_ms BIGINT NOT NULL,
            next_attempt_at_ms BIGINT NOT NULL,
            expires_at_ms BIGINT NOT NULL,
            finished_at_ms BIGINT,
            claimed_until_ms BIGINT
        );
        CREATE INDEX push_jobs_due ON push_jobs(next_attempt_at_ms) WHERE state = 'pending';
        CREATE INDEX push_jobs_finished ON push_jobs(state, finished_at_ms);
        """

    static let outboxJobsWebhooks = """
        CREATE TABLE outbox_jobs (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT COLLATE "C" NOT NULL UNIQUE,
            kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('media', 'webhook')),
            queue TEXT COLLATE "C" NOT NULL,
            target TEXT COLLATE "C" NOT NULL,
            payload TEXT COLLATE "C" NOT NULL,
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'done', 'dead')),
            attempts INTEGER NOT NULL,
            next_attempt_ms BIGINT NOT NULL,
            created_at_ms BIGINT NOT NULL,
            give_up_at_ms BIGINT,
            claimed_by TEXT COLLATE "C",
            finished_at_ms BIGINT,
            last_status INTEGER,
            last_latency_ms BIGINT,
            last_error TEXT COLLATE "C"
        );
        CREATE INDEX outbox_jobs_due ON outbox_jobs(next_attempt_ms) WHERE state = 'pending';
        CREATE INDEX outbox_jobs_queue ON outbox_jobs(queue, seq) WHERE state = 'pending';
        CREATE INDEX outbox_jobs_by_target ON outbox_jobs(kind, target, seq);
        CREATE INDEX outbox_jobs_finished ON outbox_jobs(finished_at_ms) WHERE state != 'pending';
        CREATE TABLE outbox_attempts (
            job_id TEXT COLLATE "C" NOT NULL,
            at_ms BIGINT NOT NULL,
            status INTEGER,
            latency_ms BIGINT NOT NULL,
            error TEXT COLLATE "C"
        );
        CREATE INDEX outbox_attempts_by_job ON outbox_attempts(job_id, at_ms);
        INSERT INTO outbox_jobs (id, kind, queue, target, payload, state, attempts, next_attempt_ms, created_at_ms, last_error)
            SELECT id, 'media', 'media:' || call_id, room,
                json_build_object('callId', call_id, 'action', action, 'room', room, 'identity', identity)::text,
                'pending', attempts, next_attempt_ms, created_at_ms, last_error
            FROM media_jobs ORDER BY created_at_ms, id;
        DROP TABLE media_jobs;
        CREATE TABLE webhook_endpoints (
            id TEXT COLLATE "C" PRIMARY KEY,
            url TEXT COLLATE "C" NOT NULL,
            events TEXT COLLATE "C" NOT NULL,
            enabled INTEGER NOT NULL,
            secrets TEXT COLLATE "C" NOT NULL,
            description TEXT COLLATE "C" NOT NULL,
            created_at TEXT COLLATE "C" NOT NULL,
            updated_at TEXT COLLATE "C" NOT NULL
        );
        ALTER TABLE messages ADD COLUMN kind TEXT COLLATE "C" NOT NULL DEFAULT 'text' CHECK (kind IN ('text', 'call'));
        ALTER TABLE messages ADD COLUMN call_id TEXT COLLATE "C";
        ALTER TABLE messages ADD COLUMN call_details TEXT COLLATE "C";
        CREATE UNIQUE INDEX messages_by_call ON messages(call_id) WHERE call_id IS NOT NULL;
        """
}
