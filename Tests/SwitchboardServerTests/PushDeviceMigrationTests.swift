import Foundation
import Testing
import SwitchboardStore
@testable import SwitchboardServer

/// Migration 8 keeps every VoIP device of a database written before devices had one token per
/// channel: it becomes the device's `ios-voip` token, still a ring target.
@Suite("Migration 8: push devices become tokens per channel", .timeLimit(.minutes(2)))
struct PushDeviceMigrationTests {
    /// Rows in the shape of schema version 7.
    static let before: [(String, [SQLiteValue])] = [
        (
            "INSERT INTO users (id, username, display_name, password_hash, created_at) VALUES ('u1', 'alice', 'Alice', 'x', '2026-01-01T00:00:00.000Z')",
            []
        ),
        (
            "INSERT INTO sessions (id, user_id, token_hash, created_at) VALUES ('s1', 'u1', ?, '2026-01-01T00:00:00.000Z')",
            [.blob([1, 2, 3])]
        ),
        (
            """
            INSERT INTO push_devices (device_id, user_id, session_id, platform, token, environment, created_at, updated_at, suspect_reports)
            VALUES ('d1', 'u1', 's1', 'ios-voip', 'aabb', 'production', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1)
            """, []
        ),
    ]

    static func check(_ store: any SQLStore) async throws {
        let server = ServerStore(backend: store)
        let devices = try await server.snapshot { try $0.devices.devices(of: "u1") }
        #expect(
            devices == [
                PushDevice(
                    deviceID: "d1", platform: "ios", brand: nil, sessionID: "s1",
                    tokens: ["ios-voip": PushTarget(deviceID: "d1", token: "aabb", environment: "production")])
            ])
        let suspect = try await store.snapshot(onReaderQueue: false) {
            try $0.query("SELECT suspect_reports FROM push_devices", []).first?.int("suspect_reports")
        }
        #expect(suspect == 1, "its doubts are kept")
    }

    @Test func onSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sb-mig8-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite3").path
        let old = try Database(
            configuration: DatabaseConfiguration(path: path),
            migrations: Array(Schema.migrations.prefix { $0.version <= 7 }))
        try await old.write { connection in for (sql, values) in Self.before { try connection.run(sql, values) } }
        old.close()
        let migrated = try Database(configuration: DatabaseConfiguration(path: path), migrations: Schema.migrations)
        defer { migrated.close() }
        #expect(migrated.migratedVersion >= 8)
        try await Self.check(migrated)
    }

    @Test(.enabled(if: TestPostgres.available)) func onPostgreSQL() async throws {
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let old = try PostgresDatabase(
            url: fresh.url, migrations: Array(PostgresSchema.migrations.prefix { $0.version <= 7 }), readerCount: 1)
        try await old.transaction(
            { connection in for (sql, values) in Self.before { try connection.run(sql, values) } }, afterCommit: nil)
        old.close()
        let migrated = try PostgresDatabase(url: fresh.url, migrations: PostgresSchema.migrations, readerCount: 1)
        defer { migrated.close() }
        #expect(migrated.migratedVersion >= 8)
        try await Self.check(migrated)
    }
}

/// Migration 13 keeps every push job of a database written before the gateway: the outbox
/// loses its references to the server's calls and users, nothing else.
@Suite("Migration 13: the outbox takes gateway jobs", .timeLimit(.minutes(2)))
struct PushJobUnboundMigrationTests {
    static let before: [(String, [SQLiteValue])] = [
        (
            """
            INSERT INTO push_jobs (id, call_id, user_id, device_id, provider, token, environment, payload, headers, state, reason, attempts,
                created_at_ms, next_attempt_at_ms, expires_at_ms, last_error, channel, kind)
            VALUES ('j1', 'c1', 'u1', 'd1', 'fcm', 'tok', '', '{}', '[]', 'failed', 'UNREGISTERED', 2, 1000, 2000, 3000, 'boom', 'fcm', 'notice')
            """, []
        )
    ]

    static func check(_ store: any SQLStore) async throws {
        let row = try await store.snapshot(onReaderQueue: false) {
            try $0.query(
                "SELECT call_id, user_id, state, reason, attempts, last_error, channel, kind, expires_at_ms FROM push_jobs WHERE id = 'j1'",
                []
            ).first.map {
                [
                    try $0.string("call_id"), try $0.string("user_id"), try $0.string("state"), try $0.string("reason"),
                    String(try $0.int("attempts")),
                    try $0.string("last_error"), try $0.string("channel"), try $0.string("kind"),
                    String(try $0.int64("expires_at_ms")),
                ]
            }
        }
        #expect(row == ["c1", "u1", "failed", "UNREGISTERED", "2", "boom", "fcm", "notice", "3000"])
        // A gateway job names calls and users the server does not have.
        _ = try await store.transaction(
            { connection in
                try connection.run(
                    """
                    INSERT INTO push_jobs (id, call_id, user_id, device_id, provider, token, environment, payload, headers, state, attempts,
                        created_at_ms, next_attempt_at_ms, expires_at_ms, channel, kind)
                    VALUES ('j2', 'gw/acme/call-1', 'gw/acme/bob', 'd2', 'fcm', 'tok2', '', '{}', '[]', 'pending', 0, 1, 1, 9, 'fcm', 'ring')
                    """, [])
            }, afterCommit: nil)
    }

    @Test func onSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sb-mig13-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite3").path
        let old = try Database(
            configuration: DatabaseConfiguration(path: path),
            migrations: Array(Schema.migrations.prefix { $0.version <= 12 }))
        try await old.write { connection in
            try connection.run(
                "INSERT INTO users (id, username, display_name, password_hash, created_at) VALUES ('u1', 'alice', 'Alice', 'x', '2026-01-01T00:00:00.000Z')",
                [])
            try connection.run(
                """
                INSERT INTO calls (id, scope_kind, scope_id, mode, state, created_by, client_id, created_at_ms, ring_deadline_ms, room_name, version)
                VALUES ('c1', 'conversation', 's', 'audio', 'ended', 'u1', 'k', 1, 2, 'r', 1)
                """, [])
            try connection.run(Self.before[0].0, [])
        }
        old.close()
        let migrated = try Database(configuration: DatabaseConfiguration(path: path), migrations: Schema.migrations)
        defer { migrated.close() }
        #expect(migrated.migratedVersion >= 13)
        try await Self.check(migrated)
    }
}
