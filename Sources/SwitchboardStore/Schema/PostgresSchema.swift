
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
        // The language an installation's pushes are worded in (BCP 47, as its app registered it).
        Migration(version: 22, name: "push_device_locale", sql: "ALTER TABLE push_devices ADD COLUMN locale TEXT;"),
        // Each person's say over their phones (do not disturb, snooze, quiet hours, favourites), as JSON.
        Migration(
            version: 23, name: "push_preferences",
            sql: """
                CREATE TABLE push_preferences (
                    user_id TEXT COLLATE "C" PRIMARY KEY,
                    preferences TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );
                """),
        // What the push services last said of each token: its last delivery, its last failure and why.
        Migration(
            version: 24, name: "push_device_health",
            sql: """
                ALTER TABLE push_devices ADD COLUMN last_success_at TEXT;
                ALTER TABLE push_devices ADD COLUMN last_failure_at TEXT;
                ALTER TABLE push_devices ADD COLUMN last_failure_reason TEXT;
                """),
        // A callee's push preferences are two more outcomes of a gateway signal: notified (a
        // quiet notice instead of the ring) and do_not_disturb (nothing sent).
        Migration(
            version: 25, name: "gateway_callee_preferences",
            sql: """
                ALTER TABLE gateway_signal_callees DROP CONSTRAINT gateway_signal_callees_outcome_check;
                ALTER TABLE gateway_signal_callees ADD CONSTRAINT gateway_signal_callees_outcome_check
                    CHECK (outcome IN ('rung', 'rate_limited', 'no_devices', 'notified', 'do_not_disturb'));
                """),
        Migration(version: 26, name: "outbox_jobs_webhooks", sql: outboxJobsWebhooks),
    ]
}
