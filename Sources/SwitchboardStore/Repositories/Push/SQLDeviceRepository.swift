import Foundation

/// ``DeviceRepository`` in SQL that SQLite and PostgreSQL both run (table `push_devices`, one row
/// per device and channel), on the connection of one transaction or snapshot.
package struct SQLDeviceRepository: DeviceRepository {
    package let connection: any SQLExecutor

    package func register(_ token: DeviceRegistration, at timestamp: String) throws {
        // The installation is another user's while their session that registered it lives.
        let owners = try connection.query(
            """
            SELECT 1 FROM push_devices d JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.device_id = ? AND d.user_id != ? LIMIT 1
            """,
            [.text(token.deviceID), .text(token.userID)])
        guard owners.isEmpty else { throw DeviceRegistrationConflict.deviceIDTaken }
        // The same token under another installation id: a reinstall of this user's, or a row
        // left by a session that ended, goes (with all its tokens: the old installation's alert
        // token must not reach anyone); another user's live one is theirs.
        var stale: [String] = []
        for row in try connection.query(
            """
            SELECT d.device_id, d.user_id, s.ended_at FROM push_devices d LEFT JOIN sessions s ON s.id = d.session_id
            WHERE d.channel = ? AND d.token = ? AND d.device_id != ?
            """,
            [.text(token.channel), .text(token.token), .text(token.deviceID)])
        {
            if try row.string("user_id") != token.userID, try row.optionalString("ended_at") == nil {
                throw DeviceRegistrationConflict.tokenTaken(channel: token.channel)
            }
            stale.append(try row.string("device_id"))
        }
        for deviceID in stale { try connection.run("DELETE FROM push_devices WHERE device_id = ?", [.text(deviceID)]) }
        // Rows of this installation left by another user's ended session go: nothing of theirs
        // is ever moved to this user.
        try connection.run(
            "DELETE FROM push_devices WHERE device_id = ? AND user_id != ?",
            [.text(token.deviceID), .text(token.userID)])
        try connection.run(
            """
            INSERT INTO push_devices (device_id, channel, user_id, session_id, platform, brand, token, environment, created_at, updated_at,
                payload_key_id, payload_key_sealed, locale)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11,
                COALESCE(?12, (SELECT locale FROM push_devices WHERE device_id = ?1 AND user_id = ?3 AND locale IS NOT NULL LIMIT 1)))
            ON CONFLICT (device_id, channel) DO UPDATE SET session_id = excluded.session_id,
                platform = excluded.platform, brand = excluded.brand, token = excluded.token, environment = excluded.environment,
                updated_at = excluded.updated_at, suspect_reports = 0, payload_key_id = excluded.payload_key_id,
                payload_key_sealed = excluded.payload_key_sealed, locale = COALESCE(excluded.locale, push_devices.locale)
            """,
            [
                .text(token.deviceID), .text(token.channel), .text(token.userID), .text(token.sessionID),
                .text(token.platform),
                token.brand.map(SQLiteValue.text) ?? .null, .text(token.token), .text(token.environment),
                .text(timestamp),
                token.payloadKey.map { SQLiteValue.text($0.id) } ?? .null,
                token.payloadKey.map { SQLiteValue.text($0.sealed) } ?? .null,
                token.locale.map(SQLiteValue.text) ?? .null,
            ])
        // One installation, one session: its other tokens (this user's) follow it to this session.
        try connection.run(
            "UPDATE push_devices SET session_id = ?, platform = ?, brand = ?, locale = COALESCE(?, locale) WHERE device_id = ? AND channel != ? AND user_id = ?",
            [
                .text(token.sessionID), .text(token.platform), token.brand.map(SQLiteValue.text) ?? .null,
                token.locale.map(SQLiteValue.text) ?? .null,
                .text(token.deviceID), .text(token.channel), .text(token.userID),
            ])
    }

    package func keepOnly(channels: Set<String>, ofDevice deviceID: String, of userID: String) throws {
        let rows = try connection.query(
            "SELECT channel FROM push_devices WHERE device_id = ? AND user_id = ?", [.text(deviceID), .text(userID)])
        for row in rows {
            let channel = try row.string("channel")
            guard !channels.contains(channel) else { continue }
            try connection.run(
                "DELETE FROM push_devices WHERE device_id = ? AND channel = ?", [.text(deviceID), .text(channel)])
        }
    }

    package func remove(deviceID: String, of userID: String) throws -> Bool {
        try connection.run(
            "DELETE FROM push_devices WHERE device_id = ? AND user_id = ?", [.text(deviceID), .text(userID)]) > 0
    }

    package func remove(deviceID: String, channel: String, of userID: String) throws -> Bool {
        try connection.run(
            "DELETE FROM push_devices WHERE device_id = ? AND channel = ? AND user_id = ?",
            [.text(deviceID), .text(channel), .text(userID)]) > 0
    }

    package func removeAll(boundTo sessionID: String) throws {
        try connection.run("DELETE FROM push_devices WHERE session_id = ?", [.text(sessionID)])
    }

    package func targets(of userID: String, channel: String) throws -> [PushTarget] {
        try connection.query(
            """
            SELECT d.device_id, d.token, d.environment FROM push_devices d
            JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.user_id = ? AND d.channel = ?
            ORDER BY d.created_at, d.device_id
            """,
            [.text(userID), .text(channel)]
        ).map { row in
            PushTarget(
                deviceID: try row.string("device_id"), token: try row.string("token"),
                environment: try row.string("environment"))
        }
    }

    package func devices(of userID: String) throws -> [PushDevice] {
        let rows = try connection.query(
            """
            SELECT d.device_id, d.channel, d.platform, d.brand, d.token, d.environment, d.created_at, d.session_id, d.payload_key_id,
                d.payload_key_sealed, d.locale
            FROM push_devices d
            JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.user_id = ?
            ORDER BY d.device_id, d.channel
            """,
            [.text(userID)])
        var devices:
            [String: (
                platform: String, brand: String?, session: String, created: String, tokens: [String: PushTarget],
                locale: String?
            )] = [:]
        for row in rows {
            let deviceID = try row.string("device_id"), created = try row.string("created_at")
            let target = PushTarget(
                deviceID: deviceID, token: try row.string("token"), environment: try row.string("environment"),
                payloadKey: try StoredPayloadKey(row))
            let first = (
                platform: try row.string("platform"), brand: try row.optionalString("brand"),
                session: try row.string("session_id"), created: created,
                tokens: [String: PushTarget](), locale: try row.optionalString("locale")
            )
            var device = devices[deviceID] ?? first
            device.created = min(device.created, created)
            if device.locale == nil { device.locale = try row.optionalString("locale") }
            device.tokens[try row.string("channel")] = target
            devices[deviceID] = device
        }
        return devices.sorted { ($0.value.created, $0.key) < ($1.value.created, $1.key) }.map {
            PushDevice(
                deviceID: $0.key, platform: $0.value.platform, brand: $0.value.brand, sessionID: $0.value.session,
                tokens: $0.value.tokens, locale: $0.value.locale)
        }
    }

    package func locale(ofDevice deviceID: String, of userID: String) throws -> String? {
        try connection.query(
            "SELECT locale FROM push_devices WHERE device_id = ? AND user_id = ? AND locale IS NOT NULL LIMIT 1",
            [.text(deviceID), .text(userID)]
        ).first?.optionalString("locale")
    }

    package func isLive(token: String, channel: String, of userID: String) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM push_devices d JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.token = ? AND d.channel = ? AND d.user_id = ?
            """,
            [.text(token), .text(channel), .text(userID)]
        ).isEmpty
    }

    package func payloadKeyID(token: String, channel: String, of userID: String) throws -> String? {
        guard
            let row = try connection.query(
                "SELECT payload_key_id, payload_key_sealed FROM push_devices WHERE token = ? AND channel = ? AND user_id = ?",
                [.text(token), .text(channel), .text(userID)]
            ).first
        else { return nil }
        return try StoredPayloadKey(row)?.id
    }

    package func noteOutcome(
        token: String, channel: String, of userID: String, failure: String?, at timestamp: String
    ) throws {
        if let failure {
            try connection.run(
                """
                UPDATE push_devices SET last_failure_at = ?, last_failure_reason = ?
                WHERE token = ? AND channel = ? AND user_id = ?
                """,
                [.text(timestamp), .text(String(failure.prefix(300))), .text(token), .text(channel), .text(userID)])
        } else {
            try connection.run(
                "UPDATE push_devices SET last_success_at = ? WHERE token = ? AND channel = ? AND user_id = ?",
                [.text(timestamp), .text(token), .text(channel), .text(userID)])
        }
    }

    package func removeStale(registeredBefore timestamp: String) throws -> Int {
        try connection.run("DELETE FROM push_devices WHERE updated_at < ?", [.text(timestamp)])
    }

    package func health(of userID: String) throws -> [PushTokenHealth] {
        try connection.query(
            """
            SELECT d.device_id, d.channel, d.platform, d.brand, d.locale, d.token, d.updated_at,
                d.last_success_at, d.last_failure_at, d.last_failure_reason, s.ended_at, s.id AS session
            FROM push_devices d LEFT JOIN sessions s ON s.id = d.session_id
            WHERE d.user_id = ?
            ORDER BY d.device_id, d.channel
            """,
            [.text(userID)]
        ).map { row in
            PushTokenHealth(
                deviceID: try row.string("device_id"), channel: try row.string("channel"),
                platform: try row.string("platform"), brand: try row.optionalString("brand"),
                locale: try row.optionalString("locale"), token: try row.string("token"),
                registeredAt: try row.string("updated_at"),
                bound: try row.optionalString("session") != nil && row.optionalString("ended_at") == nil,
                lastSuccessAt: try row.optionalString("last_success_at"),
                lastFailureAt: try row.optionalString("last_failure_at"),
                lastFailureReason: try row.optionalString("last_failure_reason"))
        }
    }

    package func forget(token: String, channel: String) throws {
        try connection.run("DELETE FROM push_devices WHERE token = ? AND channel = ?", [.text(token), .text(channel)])
    }

    package func doubt(token: String, channel: String) throws {
        try connection.run(
            "UPDATE push_devices SET suspect_reports = suspect_reports + 1 WHERE token = ? AND channel = ?",
            [.text(token), .text(channel)])
        try connection.run(
            "DELETE FROM push_devices WHERE token = ? AND channel = ? AND suspect_reports >= 2",
            [.text(token), .text(channel)])
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}

extension StoredPayloadKey {
    /// The row's `payload_key_id` and `payload_key_sealed`; nil when it has none.
    /// Half a key (one column set: a damaged row) is a key that cannot be opened, never none:
    /// its device's rings then fail rather than go out in the clear.
    package init?(_ row: SQLiteRow) throws {
        let id = try row.optionalString("payload_key_id"), sealed = try row.optionalString("payload_key_sealed")
        guard id != nil || sealed != nil else { return nil }
        self.init(id: id ?? "", sealed: sealed ?? "")
    }
}
