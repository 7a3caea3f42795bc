import SwitchboardStore

/// The server's schema on PostgreSQL: the same tables, columns, constraints and indexes as
/// ``Schema`` (same versions, so one number names one schema on both stores), in PostgreSQL's
/// dialect. Where the SQLite schema leans on `rowid` for insertion order, a `seq` column keeps
/// it. Text compares byte by byte (`COLLATE "C"`), as SQLite's does, whatever the database's
/// locale: ids are ordered (`user_a < user_b`) and lists sort by name. Never edit a released
/// migration; add a new one to both lists.
public enum PostgresSchema {
    /// Every migration, in version order.
    public static let migrations: [Migration] = [
        Migration(
            version: 1, name: "server_state",
            sql: """
                CREATE TABLE server_state (
                    key TEXT COLLATE "C" PRIMARY KEY,
                    value TEXT COLLATE "C" NOT NULL
                );
                INSERT INTO server_state (key, value) VALUES ('created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
                """),
        Migration(version: 2, name: "accounts_social_events", sql: accountsSocialEvents),
        Migration(version: 3, name: "calls", sql: calls),
        Migration(version: 4, name: "push", sql: push),
        Migration(
            version: 5, name: "push_last_error",
            sql: """
                ALTER TABLE push_jobs ADD COLUMN last_error TEXT COLLATE "C";
                CREATE INDEX push_jobs_errors ON push_jobs(finished_at_ms) WHERE last_error IS NOT NULL AND state != 'pending';
                """),
        Migration(
            version: 6, name: "push_claimed_by", sql: #"ALTER TABLE push_jobs ADD COLUMN claimed_by TEXT COLLATE "C";"#),
        Migration(
            version: 7, name: "push_channel",
            sql: #"ALTER TABLE push_jobs ADD COLUMN channel TEXT COLLATE "C" NOT NULL DEFAULT 'ios-voip';"#),
        Migration(version: 8, name: "push_device_tokens", sql: pushDeviceTokens),
        Migration(
            version: 9, name: "push_job_kind",
            sql:
                #"ALTER TABLE push_jobs ADD COLUMN kind TEXT COLLATE "C" NOT NULL DEFAULT 'ring' CHECK (kind IN ('ring', 'notice'));"#
        ),
        Migration(
            version: 10, name: "push_jobs_by_call",
            sql: "CREATE INDEX push_jobs_by_call ON push_jobs(call_id, user_id);"),
        Migration(
            version: 11, name: "login_throttle",
            sql: """
                CREATE TABLE login_throttle (
                    key TEXT COLLATE "C" PRIMARY KEY,
                    failures INTEGER NOT NULL,
                    blocked_until_ms BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL
                );
                CREATE INDEX login_throttle_updated ON login_throttle(updated_at_ms);
                """),
        Migration(
            version: 12, name: "gateway_apps",
            sql: """
                CREATE TABLE gateway_apps (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    name TEXT COLLATE "C" NOT NULL,
                    created_at_ms BIGINT NOT NULL
                );
                CREATE TABLE gateway_app_keys (
                    app_id TEXT COLLATE "C" NOT NULL REFERENCES gateway_apps(id),
                    key_id TEXT COLLATE "C" NOT NULL,
                    public_key TEXT COLLATE "C" NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, key_id)
                );
                CREATE TABLE gateway_replays (
                    app_id TEXT COLLATE "C" NOT NULL,
                    signature TEXT COLLATE "C" NOT NULL,
                    seen_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, signature)
                );
                CREATE INDEX gateway_replays_seen ON gateway_replays(seen_at_ms);
                """),
        Migration(
            version: 13, name: "gateway_signals",
            sql: """
                ALTER TABLE push_jobs DROP CONSTRAINT IF EXISTS push_jobs_call_id_fkey;
                ALTER TABLE push_jobs DROP CONSTRAINT IF EXISTS push_jobs_user_id_fkey;
                CREATE TABLE gateway_devices (
                    app_id TEXT COLLATE "C" NOT NULL REFERENCES gateway_apps(id),
                    user_id TEXT COLLATE "C" NOT NULL,
                    device_id TEXT COLLATE "C" NOT NULL,
                    channel TEXT COLLATE "C" NOT NULL,
                    platform TEXT COLLATE "C" NOT NULL CHECK (platform IN ('ios', 'android')),
                    brand TEXT COLLATE "C",
                    token TEXT COLLATE "C" NOT NULL,
                    environment TEXT COLLATE "C" NOT NULL,
                    suspect_reports BIGINT NOT NULL DEFAULT 0,
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, device_id, channel)
                );
                CREATE INDEX gateway_devices_by_user ON gateway_devices(app_id, user_id);
                CREATE INDEX gateway_devices_by_token ON gateway_devices(token, channel);
                CREATE TABLE gateway_signals (
                    app_id TEXT COLLATE "C" NOT NULL REFERENCES gateway_apps(id),
                    call_id TEXT COLLATE "C" NOT NULL,
                    room_id TEXT COLLATE "C" NOT NULL,
                    type TEXT COLLATE "C" NOT NULL,
                    caller_id TEXT COLLATE "C" NOT NULL,
                    caller_name TEXT COLLATE "C" NOT NULL,
                    ext TEXT COLLATE "C" NOT NULL,
                    state TEXT COLLATE "C" NOT NULL CHECK (state IN ('ringing', 'cancelled')),
                    created_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, call_id)
                );
                CREATE TABLE gateway_signal_callees (
                    app_id TEXT COLLATE "C" NOT NULL,
                    call_id TEXT COLLATE "C" NOT NULL,
                    user_id TEXT COLLATE "C" NOT NULL,
                    outcome TEXT COLLATE "C" NOT NULL CHECK (outcome IN ('rung', 'rate_limited', 'no_devices')),
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, call_id, user_id)
                );
                CREATE INDEX gateway_signal_callees_by_user ON gateway_signal_callees(app_id, user_id, created_at_ms);
                CREATE TABLE gateway_breakers (
                    app_id TEXT COLLATE "C" NOT NULL,
                    device_id TEXT COLLATE "C" NOT NULL,
                    until_ms BIGINT NOT NULL,
                    PRIMARY KEY (app_id, device_id)
                );
                CREATE INDEX push_jobs_by_device ON push_jobs(device_id, created_at_ms);
                """),
        Migration(
            version: 14, name: "sealed_secrets",
            sql: """
                ALTER TABLE push_devices ADD COLUMN payload_key_id TEXT COLLATE "C";
                ALTER TABLE push_devices ADD COLUMN payload_key_sealed TEXT COLLATE "C";
                ALTER TABLE gateway_devices ADD COLUMN payload_key_id TEXT COLLATE "C";
                ALTER TABLE gateway_devices ADD COLUMN payload_key_sealed TEXT COLLATE "C";
                ALTER TABLE gateway_apps ADD COLUMN push_settings TEXT COLLATE "C";
                """),
        Migration(
            version: 15, name: "media_jobs",
            sql: """
                CREATE TABLE media_jobs (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    call_id TEXT COLLATE "C" NOT NULL,
                    action TEXT COLLATE "C" NOT NULL CHECK (action IN ('delete_room', 'remove_participant')),
                    room TEXT COLLATE "C" NOT NULL,
                    identity TEXT COLLATE "C",
                    attempts INTEGER NOT NULL,
                    next_attempt_ms BIGINT NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    last_error TEXT
                );
                CREATE INDEX media_jobs_due ON media_jobs(next_attempt_ms);
                """),
        Migration(
            version: 16, name: "live_locations",
            sql: """
                CREATE TABLE live_locations (
                    scope_kind TEXT COLLATE "C" NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
                    scope_id TEXT COLLATE "C" NOT NULL,
                    user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
                    latitude DOUBLE PRECISION NOT NULL,
                    longitude DOUBLE PRECISION NOT NULL,
                    accuracy DOUBLE PRECISION NOT NULL,
                    started_at TEXT COLLATE "C" NOT NULL,
                    updated_at TEXT COLLATE "C" NOT NULL,
                    expires_at TEXT COLLATE "C" NOT NULL,
                    expires_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (scope_id, user_id)
                );
                CREATE INDEX live_locations_by_user ON live_locations(user_id, started_at);
                CREATE INDEX live_locations_expiry ON live_locations(expires_at_ms);
                """),
        Migration(
            version: 17, name: "e2ee_queue",
            sql: """
                CREATE TABLE e2ee_devices (
                    device_id TEXT COLLATE "C" PRIMARY KEY,
                    user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
                    created_at TEXT COLLATE "C" NOT NULL,
                    last_sequence BIGINT NOT NULL DEFAULT 0,
                    removed_at TEXT COLLATE "C"
                );
                CREATE INDEX e2ee_devices_by_user ON e2ee_devices(user_id, device_id);
                CREATE TABLE e2ee_items (
                    device_id TEXT COLLATE "C" NOT NULL,
                    sequence BIGINT NOT NULL,
                    scope_kind TEXT COLLATE "C" NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
                    scope_id TEXT COLLATE "C" NOT NULL,
                    message_id TEXT COLLATE "C" NOT NULL,
                    kind TEXT COLLATE "C" NOT NULL,
                    sender_user_id TEXT COLLATE "C" NOT NULL,
                    sender_device_id TEXT COLLATE "C" NOT NULL,
                    ciphertext BYTEA NOT NULL,
                    created_at TEXT COLLATE "C" NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (device_id, sequence)
                );
                CREATE INDEX e2ee_items_by_scope ON e2ee_items(device_id, scope_id, sequence);
                CREATE INDEX e2ee_items_by_time ON e2ee_items(created_at_ms);
                CREATE TABLE e2ee_acks (
                    device_id TEXT COLLATE "C" NOT NULL,
                    scope_id TEXT COLLATE "C" NOT NULL,
                    acked_through BIGINT NOT NULL,
                    PRIMARY KEY (device_id, scope_id)
                );
                CREATE TABLE e2ee_sends (
                    sender_user_id TEXT COLLATE "C" NOT NULL,
                    client_id TEXT COLLATE "C" NOT NULL,
                    scope_id TEXT COLLATE "C" NOT NULL,
                    fingerprint TEXT COLLATE "C" NOT NULL,
                    result TEXT COLLATE "C" NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (sender_user_id, client_id)
                );
                CREATE INDEX e2ee_sends_by_time ON e2ee_sends(created_at_ms);
                """),
        Migration(
            version: 18, name: "call_directory",
            sql: """
                CREATE TABLE organizations (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    name TEXT NOT NULL,
                    created_at TEXT COLLATE "C" NOT NULL
                );
                CREATE TABLE organization_members (
                    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations(id),
                    user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
                    joined_at TEXT COLLATE "C" NOT NULL,
                    PRIMARY KEY (organization_id, user_id)
                );
                CREATE INDEX organization_members_by_user ON organization_members(user_id, organization_id);
                CREATE TABLE call_directory_sources (
                    owner_kind TEXT COLLATE "C" NOT NULL CHECK (owner_kind IN ('user', 'organization')),
                    owner_id TEXT COLLATE "C" NOT NULL,
                    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number BIGINT NOT NULL,
                    label TEXT,
                    PRIMARY KEY (owner_id, kind, number, owner_kind)
                );
                CREATE INDEX call_directory_sources_by_number ON call_directory_sources(kind, number);
                CREATE TABLE call_directory_entries (
                    user_id TEXT COLLATE "C" NOT NULL,
                    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number BIGINT NOT NULL,
                    label TEXT,
                    PRIMARY KEY (user_id, kind, number)
                );
                CREATE TABLE call_directory_versions (
                    user_id TEXT COLLATE "C" PRIMARY KEY,
                    version BIGINT NOT NULL,
                    floor BIGINT NOT NULL DEFAULT 0
                );
                CREATE TABLE call_directory_changes (
                    user_id TEXT COLLATE "C" NOT NULL,
                    version BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number BIGINT NOT NULL,
                    label TEXT,
                    op TEXT COLLATE "C" NOT NULL CHECK (op IN ('add', 'remove')),
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (user_id, version, seq)
                );
                CREATE INDEX call_directory_changes_by_time ON call_directory_changes(created_at_ms);
                """),
        Migration(
            version: 19, name: "scheduled_calls",
            sql: """
                CREATE TABLE scheduled_calls (
                    id TEXT COLLATE "C" PRIMARY KEY,
                    group_id TEXT COLLATE "C" NOT NULL REFERENCES groups(id),
                    title TEXT,
                    mode TEXT COLLATE "C" NOT NULL,
                    starts_at_ms BIGINT NOT NULL,
                    created_by TEXT COLLATE "C" NOT NULL REFERENCES users(id),
                    created_at TEXT COLLATE "C" NOT NULL,
                    call_id TEXT COLLATE "C",
                    cancelled_at TEXT COLLATE "C"
                );
                CREATE INDEX scheduled_calls_by_group ON scheduled_calls(group_id, starts_at_ms);
                CREATE TABLE call_preauthorizations (
                    token_hash BYTEA PRIMARY KEY,
                    scheduled_call_id TEXT COLLATE "C" NOT NULL REFERENCES scheduled_calls(id),
                    user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
                    expires_at_ms BIGINT NOT NULL,
                    used_at TEXT COLLATE "C"
                );
                CREATE INDEX call_preauthorizations_by_time ON call_preauthorizations(expires_at_ms);
                """),
        Migration(
            version: 20, name: "rate_counters_session_expiry",
            sql: """
                CREATE TABLE rate_counters (
                    key TEXT COLLATE "C" PRIMARY KEY,
                    failures INTEGER NOT NULL,
                    blocked_until_ms BIGINT NOT NULL,
                    slots TEXT COLLATE "C" NOT NULL,
                    updated_at_ms BIGINT NOT NULL
                );
                INSERT INTO rate_counters (key, failures, blocked_until_ms, slots, updated_at_ms)
                    SELECT key, failures, blocked_until_ms, '', updated_at_ms FROM login_throttle;
                DROP TABLE login_throttle;
                DROP TABLE gateway_breakers;
                CREATE INDEX rate_counters_updated ON rate_counters(updated_at_ms);
                ALTER TABLE sessions ADD COLUMN created_at_ms BIGINT;
                ALTER TABLE sessions ADD COLUMN seen_at_ms BIGINT;
                UPDATE sessions SET created_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
                    seen_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
                """),
        Migration(
            version: 21, name: "relay_presence",
            sql: """
                CREATE TABLE relay_presence (
                    room TEXT COLLATE "C" NOT NULL,
                    instance TEXT COLLATE "C" NOT NULL,
                    sockets INTEGER NOT NULL,
                    seen_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (room, instance)
                );
                """),
    ]

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
}
