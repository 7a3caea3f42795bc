
/// The server's database schema, as ordered migrations. Never edit a released migration;
/// add a new one.
public enum Schema {
    /// Every migration, in version order.
    public static let migrations: [Migration] = [
        Migration(
            version: 1, name: "server_state",
            sql: """
                CREATE TABLE server_state (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) STRICT;
                INSERT INTO server_state (key, value) VALUES ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
                """),
        Migration(version: 2, name: "accounts_social_events", sql: accountsSocialEvents),
        Migration(version: 3, name: "calls", sql: calls),
        Migration(version: 4, name: "push", sql: push),
        // The error of a job's latest failed attempt, kept when the job then ends for another
        // reason (its call stopped ringing, its ring window passed), so the status view can
        // list a TLS mistake that never let a push out.
        Migration(
            version: 5, name: "push_last_error",
            sql: """
                ALTER TABLE push_jobs ADD COLUMN last_error TEXT;
                CREATE INDEX push_jobs_errors ON push_jobs(finished_at_ms) WHERE last_error IS NOT NULL AND state != 'pending';
                """),
        // Which instance holds a job's claim (a lease): only it may record the outcome, and
        // another takes the job over only once the lease ran out.
        Migration(version: 6, name: "push_claimed_by", sql: "ALTER TABLE push_jobs ADD COLUMN claimed_by TEXT;"),
        // The channel that sends a job (the token kind its device registered); the jobs before
        // channels were all PushKit VoIP pushes.
        Migration(
            version: 7, name: "push_channel",
            sql: "ALTER TABLE push_jobs ADD COLUMN channel TEXT NOT NULL DEFAULT 'ios-voip';"),
        Migration(version: 8, name: "push_device_tokens", sql: pushDeviceTokens),
        // A job rings, or tells a device that a ring is over (a notice, which needs no ringing call).
        Migration(
            version: 9, name: "push_job_kind",
            sql:
                "ALTER TABLE push_jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'ring' CHECK (kind IN ('ring', 'notice'));"
        ),
        // A ring's end asks which of a user's devices its jobs reached: by call, not a scan of
        // every job ever kept.
        Migration(
            version: 10, name: "push_jobs_by_call",
            sql: "CREATE INDEX push_jobs_by_call ON push_jobs(call_id, user_id);"),
        // Failed logins, per account and address (SPEC §8): the counters hold across restarts.
        Migration(
            version: 11, name: "login_throttle",
            sql: """
                CREATE TABLE login_throttle (
                    key TEXT PRIMARY KEY NOT NULL,
                    failures INTEGER NOT NULL,
                    blocked_until_ms INTEGER NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                ) STRICT;
                CREATE INDEX login_throttle_updated ON login_throttle(updated_at_ms);
                """),
        // The push gateway's app servers, their Ed25519 keys and the signatures seen lately (SPEC §8).
        Migration(
            version: 12, name: "gateway_apps",
            sql: """
                CREATE TABLE gateway_apps (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL
                ) STRICT;
                CREATE TABLE gateway_app_keys (
                    app_id TEXT NOT NULL REFERENCES gateway_apps(id),
                    key_id TEXT NOT NULL,
                    public_key TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, key_id)
                ) STRICT;
                CREATE TABLE gateway_replays (
                    app_id TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    seen_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, signature)
                ) STRICT;
                CREATE INDEX gateway_replays_seen ON gateway_replays(seen_at_ms);
                """),
        // Gateway rings go through the same outbox, for users and calls of the apps' own: the
        // outbox's rows no longer reference the server's calls and users (SQLite cannot drop a
        // constraint: the table is made again, same columns, same order, same indexes).
        Migration(
            version: 13, name: "gateway_signals",
            sql: """
                CREATE TABLE push_jobs_unbound (
                    id TEXT PRIMARY KEY NOT NULL,
                    call_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
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
                    claimed_until_ms INTEGER,
                    last_error TEXT,
                    claimed_by TEXT,
                    channel TEXT NOT NULL DEFAULT 'ios-voip',
                    kind TEXT NOT NULL DEFAULT 'ring' CHECK (kind IN ('ring', 'notice'))
                ) STRICT;
                INSERT INTO push_jobs_unbound (id, call_id, user_id, device_id, provider, token, environment, payload, headers, state, reason,
                    attempts, created_at_ms, next_attempt_at_ms, expires_at_ms, finished_at_ms, claimed_until_ms, last_error, claimed_by, channel, kind)
                SELECT id, call_id, user_id, device_id, provider, token, environment, payload, headers, state, reason,
                    attempts, created_at_ms, next_attempt_at_ms, expires_at_ms, finished_at_ms, claimed_until_ms, last_error, claimed_by, channel, kind
                FROM push_jobs ORDER BY rowid;
                DROP TABLE push_jobs;
                ALTER TABLE push_jobs_unbound RENAME TO push_jobs;
                CREATE INDEX push_jobs_due ON push_jobs(next_attempt_at_ms) WHERE state = 'pending';
                CREATE INDEX push_jobs_finished ON push_jobs(state, finished_at_ms);
                CREATE INDEX push_jobs_errors ON push_jobs(finished_at_ms) WHERE last_error IS NOT NULL AND state != 'pending';
                CREATE INDEX push_jobs_by_call ON push_jobs(call_id, user_id);
                CREATE TABLE gateway_devices (
                    app_id TEXT NOT NULL REFERENCES gateway_apps(id),
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    channel TEXT NOT NULL,
                    platform TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
                    brand TEXT,
                    token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    suspect_reports INTEGER NOT NULL DEFAULT 0,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, device_id, channel)
                ) STRICT;
                CREATE INDEX gateway_devices_by_user ON gateway_devices(app_id, user_id);
                CREATE INDEX gateway_devices_by_token ON gateway_devices(token, channel);
                CREATE TABLE gateway_signals (
                    app_id TEXT NOT NULL REFERENCES gateway_apps(id),
                    call_id TEXT NOT NULL,
                    room_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    caller_id TEXT NOT NULL,
                    caller_name TEXT NOT NULL,
                    ext TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('ringing', 'cancelled')),
                    created_at_ms INTEGER NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, call_id)
                ) STRICT;
                CREATE TABLE gateway_signal_callees (
                    app_id TEXT NOT NULL,
                    call_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    outcome TEXT NOT NULL CHECK (outcome IN ('rung', 'rate_limited', 'no_devices')),
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, call_id, user_id)
                ) STRICT;
                CREATE INDEX gateway_signal_callees_by_user ON gateway_signal_callees(app_id, user_id, created_at_ms);
                CREATE TABLE gateway_breakers (
                    app_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    until_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, device_id)
                ) STRICT;
                CREATE INDEX push_jobs_by_device ON push_jobs(device_id, created_at_ms);
                """),
        // Secrets sealed under dataEncryptionKey: a device's VoIP payload key (SPEC §3: its id, and
        // its bytes) and a gateway app's own push settings.
        Migration(
            version: 14, name: "sealed_secrets",
            sql: """
                ALTER TABLE push_devices ADD COLUMN payload_key_id TEXT;
                ALTER TABLE push_devices ADD COLUMN payload_key_sealed TEXT;
                ALTER TABLE gateway_devices ADD COLUMN payload_key_id TEXT;
                ALTER TABLE gateway_devices ADD COLUMN payload_key_sealed TEXT;
                ALTER TABLE gateway_apps ADD COLUMN push_settings TEXT;
                """),
        // Media withdrawals (remove a participant, delete a room) written with the change that
        // calls for them and retried until the media backend confirms (issue 20 §7).
        Migration(
            version: 15, name: "media_jobs",
            sql: """
                CREATE TABLE media_jobs (
                    id TEXT PRIMARY KEY NOT NULL,
                    call_id TEXT NOT NULL,
                    action TEXT NOT NULL CHECK (action IN ('delete_room', 'remove_participant')),
                    room TEXT NOT NULL,
                    identity TEXT,
                    attempts INTEGER NOT NULL,
                    next_attempt_ms INTEGER NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    last_error TEXT
                ) STRICT;
                CREATE INDEX media_jobs_due ON media_jobs(next_attempt_ms);
                """),
        // Live-location shares (SPEC §9): one per user and conversation or group, ended by
        // their owner, by losing the scope, or by their expiry (a sweep from stored time).
        Migration(
            version: 16, name: "live_locations",
            sql: """
                CREATE TABLE live_locations (
                    scope_kind TEXT NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
                    scope_id TEXT NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    latitude REAL NOT NULL,
                    longitude REAL NOT NULL,
                    accuracy REAL NOT NULL,
                    started_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    expires_at TEXT NOT NULL,
                    expires_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (scope_id, user_id)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX live_locations_by_user ON live_locations(user_id, started_at);
                CREATE INDEX live_locations_expiry ON live_locations(expires_at_ms);
                """),
        // The per-device queues of end-to-end-encrypted items (SPEC §9): a device's items carry
        // its own increasing sequence (`last_sequence`); a device's read of a scope with
        // `after=N` acknowledges (and deletes) its items up to N there (`e2ee_acks`); a send
        // with a clientId is kept for its replay (`e2ee_sends`).
        Migration(
            version: 17, name: "e2ee_queue",
            sql: """
                CREATE TABLE e2ee_devices (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    created_at TEXT NOT NULL,
                    last_sequence INTEGER NOT NULL DEFAULT 0,
                    -- A removed device keeps its row (and its sequence, so a cursor saved before
                    -- never points past it) and its id stays its user's.
                    removed_at TEXT
                ) STRICT;
                CREATE INDEX e2ee_devices_by_user ON e2ee_devices(user_id, device_id);
                CREATE TABLE e2ee_items (
                    device_id TEXT NOT NULL,
                    sequence INTEGER NOT NULL,
                    scope_kind TEXT NOT NULL CHECK (scope_kind IN ('conversation', 'group')),
                    scope_id TEXT NOT NULL,
                    message_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    sender_user_id TEXT NOT NULL,
                    sender_device_id TEXT NOT NULL,
                    ciphertext BLOB NOT NULL,
                    created_at TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (device_id, sequence)
                ) STRICT;
                CREATE INDEX e2ee_items_by_scope ON e2ee_items(device_id, scope_id, sequence);
                CREATE INDEX e2ee_items_by_time ON e2ee_items(created_at_ms);
                CREATE TABLE e2ee_acks (
                    device_id TEXT NOT NULL,
                    scope_id TEXT NOT NULL,
                    acked_through INTEGER NOT NULL,
                    PRIMARY KEY (device_id, scope_id)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE e2ee_sends (
                    sender_user_id TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    scope_id TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    result TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (sender_user_id, client_id)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX e2ee_sends_by_time ON e2ee_sends(created_at_ms);
                """),
        // Call Directory lists (SPEC §11): what each user and organisation lists
        // (`call_directory_sources`), each user's merged list (`call_directory_entries`) at
        // their `version`, and its changes by version, kept 30 days for incremental answers.
        Migration(
            version: 18, name: "call_directory",
            sql: """
                CREATE TABLE organizations (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    created_at TEXT NOT NULL
                ) STRICT;
                CREATE TABLE organization_members (
                    organization_id TEXT NOT NULL REFERENCES organizations(id),
                    user_id TEXT NOT NULL REFERENCES users(id),
                    joined_at TEXT NOT NULL,
                    PRIMARY KEY (organization_id, user_id)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX organization_members_by_user ON organization_members(user_id, organization_id);
                CREATE TABLE call_directory_sources (
                    owner_kind TEXT NOT NULL CHECK (owner_kind IN ('user', 'organization')),
                    owner_id TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number INTEGER NOT NULL,
                    label TEXT,
                    PRIMARY KEY (owner_id, kind, number, owner_kind)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX call_directory_sources_by_number ON call_directory_sources(kind, number);
                CREATE TABLE call_directory_entries (
                    user_id TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number INTEGER NOT NULL,
                    label TEXT,
                    PRIMARY KEY (user_id, kind, number)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE call_directory_versions (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    version INTEGER NOT NULL,
                    floor INTEGER NOT NULL DEFAULT 0
                ) STRICT;
                CREATE TABLE call_directory_changes (
                    user_id TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('blocking', 'identification')),
                    number INTEGER NOT NULL,
                    label TEXT,
                    op TEXT NOT NULL CHECK (op IN ('add', 'remove')),
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (user_id, version, seq)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX call_directory_changes_by_time ON call_directory_changes(created_at_ms);
                """),
        // Scheduled group calls (meetings) and the single-use pre-authorisations that let a
        // member's join carry the media token (issue 22, meeting preload).
        Migration(
            version: 19, name: "scheduled_calls",
            sql: """
                CREATE TABLE scheduled_calls (
                    id TEXT PRIMARY KEY NOT NULL,
                    group_id TEXT NOT NULL REFERENCES groups(id),
                    title TEXT,
                    mode TEXT NOT NULL,
                    starts_at_ms INTEGER NOT NULL,
                    created_by TEXT NOT NULL REFERENCES users(id),
                    created_at TEXT NOT NULL,
                    call_id TEXT,
                    cancelled_at TEXT
                ) STRICT;
                CREATE INDEX scheduled_calls_by_group ON scheduled_calls(group_id, starts_at_ms);
                CREATE TABLE call_preauthorizations (
                    token_hash BLOB PRIMARY KEY NOT NULL,
                    scheduled_call_id TEXT NOT NULL REFERENCES scheduled_calls(id),
                    user_id TEXT NOT NULL REFERENCES users(id),
                    expires_at_ms INTEGER NOT NULL,
                    used_at TEXT
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX call_preauthorizations_by_time ON call_preauthorizations(expires_at_ms);
                """),
        // The one limiter's counters (logins, registrations, rings, writes) replace the login
        // throttle's table, whose rows they keep; sessions learn when they started and were
        // last used, for idle and absolute expiry (sessions before this count from now).
        Migration(
            version: 20, name: "rate_counters_session_expiry",
            sql: """
                CREATE TABLE rate_counters (
                    key TEXT PRIMARY KEY NOT NULL,
                    failures INTEGER NOT NULL,
                    blocked_until_ms INTEGER NOT NULL,
                    slots TEXT NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                ) STRICT;
                INSERT INTO rate_counters (key, failures, blocked_until_ms, slots, updated_at_ms)
                    SELECT key, failures, blocked_until_ms, '', updated_at_ms FROM login_throttle;
                DROP TABLE login_throttle;
                DROP TABLE gateway_breakers;
                CREATE INDEX rate_counters_updated ON rate_counters(updated_at_ms);
                ALTER TABLE sessions ADD COLUMN created_at_ms INTEGER;
                ALTER TABLE sessions ADD COLUMN seen_at_ms INTEGER;
                UPDATE sessions SET created_at_ms = CAST(strftime('%s', 'now') AS INTEGER) * 1000,
                    seen_at_ms = CAST(strftime('%s', 'now') AS INTEGER) * 1000;
                """),
        // Relay sockets per room and instance, reported every few seconds by instances that
        // share a database, so every instance's empty-room watchdog counts them all.
        Migration(
            version: 21, name: "relay_presence",
            sql: """
                CREATE TABLE relay_presence (
                    room TEXT NOT NULL,
                    instance TEXT NOT NULL,
                    sockets INTEGER NOT NULL,
                    seen_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (room, instance)
                ) STRICT, WITHOUT ROWID;
                """),
        // The language an installation's pushes are worded in (BCP 47, as its app registered it).
        Migration(version: 22, name: "push_device_locale", sql: "ALTER TABLE push_devices ADD COLUMN locale TEXT;"),
        // Each person's say over their phones (do not disturb, snooze, quiet hours, favourites), as JSON.
        Migration(
            version: 23, name: "push_preferences",
            sql: """
                CREATE TABLE push_preferences (
                    user_id TEXT PRIMARY KEY,
                    preferences TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                ) STRICT, WITHOUT ROWID;
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
                CREATE TABLE gateway_signal_callees_new (
                    app_id TEXT NOT NULL,
                    call_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    outcome TEXT NOT NULL
                        CHECK (outcome IN ('rung', 'rate_limited', 'no_devices', 'notified', 'do_not_disturb')),
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, call_id, user_id)
                ) STRICT;
                INSERT INTO gateway_signal_callees_new (app_id, call_id, user_id, outcome, created_at_ms)
                    SELECT app_id, call_id, user_id, outcome, created_at_ms FROM gateway_signal_callees;
                DROP TABLE gateway_signal_callees;
                ALTER TABLE gateway_signal_callees_new RENAME TO gateway_signal_callees;
                CREATE INDEX gateway_signal_callees_by_user ON gateway_signal_callees(app_id, user_id, created_at_ms);
                """),
        // One outbox for every job that leaves the server after a commit but is not a push
        // (media withdrawals, webhook deliveries): jobs of one queue go one at a time, in order;
        // media_jobs moves into it. The app's webhook endpoints, and the messages that tell a
        // conversation about its calls.
        Migration(version: 26, name: "outbox_jobs_webhooks", sql: outboxJobsWebhooks),
    ]
}
