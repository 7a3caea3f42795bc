import SwitchboardStore

/// ``DeviceRepository`` in SQL that SQLite and PostgreSQL both run (table `push_devices`), working on the
/// connection of one transaction or snapshot.
struct SQLDeviceRepository: DeviceRepository {
    let connection: any SQLExecutor

    func register(_ device: DeviceRegistration, at timestamp: String) throws {
        try connection.run(
            "DELETE FROM push_devices WHERE platform = ? AND token = ? AND device_id != ?",
            [.text(device.platform), .text(device.token), .text(device.deviceID)])
        try connection.run(
            """
            INSERT INTO push_devices (device_id, user_id, session_id, platform, token, environment, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
            ON CONFLICT (device_id) DO UPDATE SET user_id = excluded.user_id, session_id = excluded.session_id,
                platform = excluded.platform, token = excluded.token, environment = excluded.environment,
                updated_at = excluded.updated_at, suspect_reports = 0
            """,
            [.text(device.deviceID), .text(device.userID), .text(device.sessionID), .text(device.platform), .text(device.token),
             .text(device.environment), .text(timestamp)])
    }

    func remove(deviceID: String, of userID: String) throws -> Bool {
        try connection.run("DELETE FROM push_devices WHERE device_id = ? AND user_id = ?", [.text(deviceID), .text(userID)]) > 0
    }

    func removeAll(boundTo sessionID: String) throws {
        try connection.run("DELETE FROM push_devices WHERE session_id = ?", [.text(sessionID)])
    }

    func targets(of userID: String, platform: String) throws -> [PushTarget] {
        try connection.query(
            """
            SELECT d.device_id, d.token, d.environment FROM push_devices d
            JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.user_id = ? AND d.platform = ?
            ORDER BY d.created_at, d.device_id
            """,
            [.text(userID), .text(platform)]
        ).map { row in
            PushTarget(deviceID: try row.string("device_id"), token: try row.string("token"), environment: try row.string("environment"))
        }
    }

    func isLive(token: String, of userID: String) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM push_devices d JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
            WHERE d.token = ? AND d.user_id = ?
            """,
            [.text(token), .text(userID)]).isEmpty
    }

    func forget(token: String) throws {
        try connection.run("DELETE FROM push_devices WHERE token = ?", [.text(token)])
    }

    func doubt(token: String) throws {
        try connection.run("UPDATE push_devices SET suspect_reports = suspect_reports + 1 WHERE token = ?", [.text(token)])
        try connection.run("DELETE FROM push_devices WHERE token = ? AND suspect_reports >= 2", [.text(token)])
    }
}
