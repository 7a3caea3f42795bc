import Foundation
import SwitchboardPushCore

/// The gateway's devices, signals and per-callee outcomes.
package protocol GatewaySignalRepository {
    func register(app: String, user: String, device: GatewayDevice, at nowMS: Int64) throws
    func removeDevice(app: String, user: String, deviceID: String) throws -> Bool
    func devices(app: String, user: String) throws -> [GatewayDevice]
    func isLive(app: String, user: String, token: String, channel: String) throws -> Bool
    func forget(app: String, token: String, channel: String) throws
    /// The id of the payload key the app's user's `token` on `channel` has now; nil without one.
    func payloadKeyID(app: String, user: String, token: String, channel: String) throws -> String?
    func doubt(app: String, token: String, channel: String) throws
    func insert(_ signal: GatewaySignal) throws
    func signal(app: String, call: String) throws -> GatewaySignal?
    func cancel(app: String, call: String) throws
    func recordCallee(app: String, call: String, user: String, outcome: String, at nowMS: Int64) throws
    func callees(app: String, call: String) throws -> [(user: String, outcome: String)]
}

package struct SQLGatewaySignalRepository: GatewaySignalRepository {
    package let connection: any SQLExecutor

    package func register(app: String, user: String, device: GatewayDevice, at nowMS: Int64) throws {
        for (channel, target) in device.tokens {
            // One installation per token: an older device holding it is a reinstall.
            try connection.run(
                "DELETE FROM gateway_devices WHERE app_id = ? AND channel = ? AND token = ? AND device_id != ?",
                [.text(app), .text(channel), .text(target.token), .text(device.deviceID)])
            try connection.run(
                """
                INSERT INTO gateway_devices (app_id, user_id, device_id, channel, platform, brand, token, environment, created_at_ms,
                    payload_key_id, payload_key_sealed)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (app_id, device_id, channel) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform,
                    brand = excluded.brand, token = excluded.token, environment = excluded.environment, suspect_reports = 0,
                    payload_key_id = excluded.payload_key_id, payload_key_sealed = excluded.payload_key_sealed
                """,
                [
                    .text(app), .text(user), .text(device.deviceID), .text(channel), .text(device.platform),
                    device.brand.map(SQLiteValue.text) ?? .null,
                    .text(target.token), .text(target.environment), .integer(nowMS),
                    target.payloadKey.map { SQLiteValue.text($0.id) } ?? .null,
                    target.payloadKey.map { SQLiteValue.text($0.sealed) } ?? .null,
                ])
        }
        for row in try connection.query(
            "SELECT channel FROM gateway_devices WHERE app_id = ? AND device_id = ?",
            [.text(app), .text(device.deviceID)])
        {
            let channel = try row.string("channel")
            if device.tokens[channel] == nil {
                try connection.run(
                    "DELETE FROM gateway_devices WHERE app_id = ? AND device_id = ? AND channel = ?",
                    [.text(app), .text(device.deviceID), .text(channel)])
            }
        }
    }

    package func removeDevice(app: String, user: String, deviceID: String) throws -> Bool {
        let found =
            !(try connection.query(
                "SELECT 1 FROM gateway_devices WHERE app_id = ? AND user_id = ? AND device_id = ?",
                [.text(app), .text(user), .text(deviceID)]
            ).isEmpty)
        if found {
            try connection.run(
                "DELETE FROM gateway_devices WHERE app_id = ? AND user_id = ? AND device_id = ?",
                [.text(app), .text(user), .text(deviceID)])
        }
        return found
    }

    package func devices(app: String, user: String) throws -> [GatewayDevice] {
        var devices: [String: GatewayDevice] = [:]
        for row in try connection.query(
            """
            SELECT device_id, channel, platform, brand, token, environment, payload_key_id, payload_key_sealed FROM gateway_devices
            WHERE app_id = ? AND user_id = ? ORDER BY device_id, channel
            """,
            [.text(app), .text(user)])
        {
            let id = try row.string("device_id")
            let platform = try row.string("platform"), brand = try row.optionalString("brand")
            var device = devices[id] ?? GatewayDevice(deviceID: id, platform: platform, brand: brand, tokens: [:])
            device.tokens[try row.string("channel")] = PushTarget(
                deviceID: id, token: try row.string("token"), environment: try row.string("environment"),
                payloadKey: try StoredPayloadKey(row))
            devices[id] = device
        }
        return devices.keys.sorted().compactMap { devices[$0] }
    }

    package func isLive(app: String, user: String, token: String, channel: String) throws -> Bool {
        let rows = try connection.query(
            "SELECT 1 FROM gateway_devices WHERE app_id = ? AND user_id = ? AND token = ? AND channel = ?",
            [.text(app), .text(user), .text(token), .text(channel)])
        return !rows.isEmpty
    }

    package func payloadKeyID(app: String, user: String, token: String, channel: String) throws -> String? {
        guard
            let row = try connection.query(
                "SELECT payload_key_id, payload_key_sealed FROM gateway_devices WHERE app_id = ? AND user_id = ? AND token = ? AND channel = ?",
                [.text(app), .text(user), .text(token), .text(channel)]
            ).first
        else { return nil }
        return try StoredPayloadKey(row)?.id
    }

    package func forget(app: String, token: String, channel: String) throws {
        try connection.run(
            "DELETE FROM gateway_devices WHERE app_id = ? AND token = ? AND channel = ?",
            [.text(app), .text(token), .text(channel)])
    }

    package func doubt(app: String, token: String, channel: String) throws {
        try connection.run(
            "UPDATE gateway_devices SET suspect_reports = suspect_reports + 1 WHERE app_id = ? AND token = ? AND channel = ?",
            [.text(app), .text(token), .text(channel)])
        try connection.run(
            "DELETE FROM gateway_devices WHERE app_id = ? AND token = ? AND channel = ? AND suspect_reports >= 2",
            [.text(app), .text(token), .text(channel)])
    }

    package func insert(_ signal: GatewaySignal) throws {
        try connection.run(
            """
            INSERT INTO gateway_signals (app_id, call_id, room_id, type, caller_id, caller_name, ext, state, created_at_ms, expires_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(signal.appID), .text(signal.callID), .text(signal.roomID), .text(signal.type),
                .text(signal.callerID), .text(signal.callerName),
                .text(signal.ext), .text(signal.state), .integer(signal.createdAtMS), .integer(signal.expiresAtMS),
            ])
    }

    package func signal(app: String, call: String) throws -> GatewaySignal? {
        guard
            let row = try connection.query(
                "SELECT room_id, type, caller_id, caller_name, ext, state, created_at_ms, expires_at_ms FROM gateway_signals WHERE app_id = ? AND call_id = ?",
                [.text(app), .text(call)]
            ).first
        else { return nil }
        return GatewaySignal(
            appID: app, callID: call, roomID: try row.string("room_id"), type: try row.string("type"),
            callerID: try row.string("caller_id"),
            callerName: try row.string("caller_name"), ext: try row.string("ext"), state: try row.string("state"),
            createdAtMS: try row.int64("created_at_ms"), expiresAtMS: try row.int64("expires_at_ms"))
    }

    package func cancel(app: String, call: String) throws {
        try connection.run(
            "UPDATE gateway_signals SET state = 'cancelled' WHERE app_id = ? AND call_id = ?",
            [.text(app), .text(call)])
    }

    package func recordCallee(app: String, call: String, user: String, outcome: String, at nowMS: Int64) throws {
        try connection.run(
            "INSERT INTO gateway_signal_callees (app_id, call_id, user_id, outcome, created_at_ms) VALUES (?, ?, ?, ?, ?)",
            [.text(app), .text(call), .text(user), .text(outcome), .integer(nowMS)])
    }

    package func callees(app: String, call: String) throws -> [(user: String, outcome: String)] {
        try connection.query(
            "SELECT user_id, outcome FROM gateway_signal_callees WHERE app_id = ? AND call_id = ? ORDER BY user_id",
            [.text(app), .text(call)]
        ).map { (try $0.string("user_id"), try $0.string("outcome")) }
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}

/// An app's user's device, as the gateway keeps it (apart from the server's own accounts).
package struct GatewayDevice: Sendable, Equatable {
    package var deviceID: String
    package var platform: String
    package var brand: String?
    /// By channel: token and environment.
    package var tokens: [String: PushTarget]

    package init(deviceID: String, platform: String, brand: String?, tokens: [String: PushTarget]) {
        self.deviceID = deviceID
        self.platform = platform
        self.brand = brand
        self.tokens = tokens
    }
}

/// A call signal from an app server (SPEC §8).
package struct GatewaySignal: Sendable, Equatable {
    package var appID: String
    package var callID: String
    package var roomID: String
    package var type: String
    package var callerID: String
    package var callerName: String
    /// The app's `ext` object as JSON text, kept with the signal.
    package var ext: String
    package var state: String
    package var createdAtMS: Int64
    package var expiresAtMS: Int64

    package init(
        appID: String, callID: String, roomID: String, type: String, callerID: String, callerName: String, ext: String,
        state: String, createdAtMS: Int64, expiresAtMS: Int64
    ) {
        self.appID = appID
        self.callID = callID
        self.roomID = roomID
        self.type = type
        self.callerID = callerID
        self.callerName = callerName
        self.ext = ext
        self.state = state
        self.createdAtMS = createdAtMS
        self.expiresAtMS = expiresAtMS
    }
}
