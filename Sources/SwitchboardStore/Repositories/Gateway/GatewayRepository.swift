import Foundation

/// An app server of the push gateway and its public keys.
package struct GatewayApp: Sendable, Equatable {
    package struct Key: Sendable, Equatable {
        package var keyID: String
        /// The Ed25519 public key, 32 bytes as base64url.
        package var publicKey: String
        package var createdAtMS: Int64

        package init(keyID: String, publicKey: String, createdAtMS: Int64) {
            self.keyID = keyID
            self.publicKey = publicKey
            self.createdAtMS = createdAtMS
        }
    }

    package var id: String
    package var name: String
    package var createdAtMS: Int64
    package var keys: [Key]

    package init(id: String, name: String, createdAtMS: Int64, keys: [Key]) {
        self.id = id
        self.name = name
        self.createdAtMS = createdAtMS
        self.keys = keys
    }
}

/// The gateway's apps, their keys and the signatures seen lately (tables `gateway_apps`,
/// `gateway_app_keys`, `gateway_replays`).
package protocol GatewayRepository {
    /// Creates the app with its first keys; false when the id is taken.
    func create(_ app: GatewayApp) throws -> Bool
    func app(id: String) throws -> GatewayApp?
    /// Every app, by id.
    func apps() throws -> [GatewayApp]
    /// Adds a key; false when the app has one by that id.
    func addKey(_ key: GatewayApp.Key, to appID: String) throws -> Bool
    /// Removes a key; false when there was none.
    func removeKey(_ keyID: String, of appID: String) throws -> Bool
    /// Records a signature; false when it was recorded before (a replay). Forgets the ones
    /// seen before `forgetBeforeMS`.
    func recordSignature(_ signature: String, of appID: String, at nowMS: Int64, forgetBeforeMS: Int64) throws -> Bool
    /// The app's own push settings, sealed; nil when it uses the server's.
    func pushSettings(of appID: String) throws -> String?
    /// Stores (or with nil, drops) the app's sealed push settings; false when there is no such app.
    func setPushSettings(_ sealed: String?, of appID: String) throws -> Bool
}

/// ``GatewayRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLGatewayRepository: GatewayRepository {
    package let connection: any SQLExecutor

    package func create(_ app: GatewayApp) throws -> Bool {
        guard try connection.query("SELECT 1 FROM gateway_apps WHERE id = ?", [.text(app.id)]).isEmpty else {
            return false
        }
        try connection.run(
            "INSERT INTO gateway_apps (id, name, created_at_ms) VALUES (?, ?, ?)",
            [.text(app.id), .text(app.name), .integer(app.createdAtMS)])
        for key in app.keys { _ = try addKey(key, to: app.id) }
        return true
    }

    package func app(id: String) throws -> GatewayApp? {
        guard
            let row = try connection.query("SELECT name, created_at_ms FROM gateway_apps WHERE id = ?", [.text(id)])
                .first
        else { return nil }
        let keys = try connection.query(
            "SELECT key_id, public_key, created_at_ms FROM gateway_app_keys WHERE app_id = ? ORDER BY created_at_ms, key_id",
            [.text(id)]
        ).map {
            GatewayApp.Key(
                keyID: try $0.string("key_id"), publicKey: try $0.string("public_key"),
                createdAtMS: try $0.int64("created_at_ms"))
        }
        return GatewayApp(id: id, name: try row.string("name"), createdAtMS: try row.int64("created_at_ms"), keys: keys)
    }

    package func apps() throws -> [GatewayApp] {
        try connection.query("SELECT id FROM gateway_apps ORDER BY id", []).compactMap { try app(id: $0.string("id")) }
    }

    package func addKey(_ key: GatewayApp.Key, to appID: String) throws -> Bool {
        guard
            try connection.query(
                "SELECT 1 FROM gateway_app_keys WHERE app_id = ? AND key_id = ?", [.text(appID), .text(key.keyID)]
            ).isEmpty
        else { return false }
        try connection.run(
            "INSERT INTO gateway_app_keys (app_id, key_id, public_key, created_at_ms) VALUES (?, ?, ?, ?)",
            [.text(appID), .text(key.keyID), .text(key.publicKey), .integer(key.createdAtMS)])
        return true
    }

    package func removeKey(_ keyID: String, of appID: String) throws -> Bool {
        guard
            !(try connection.query(
                "SELECT 1 FROM gateway_app_keys WHERE app_id = ? AND key_id = ?", [.text(appID), .text(keyID)]
            ).isEmpty)
        else { return false }
        try connection.run(
            "DELETE FROM gateway_app_keys WHERE app_id = ? AND key_id = ?", [.text(appID), .text(keyID)])
        return true
    }

    package func pushSettings(of appID: String) throws -> String? {
        try connection.query("SELECT push_settings FROM gateway_apps WHERE id = ?", [.text(appID)]).first?
            .optionalString("push_settings")
    }

    package func setPushSettings(_ sealed: String?, of appID: String) throws -> Bool {
        try connection.run(
            "UPDATE gateway_apps SET push_settings = ? WHERE id = ?",
            [sealed.map(SQLiteValue.text) ?? .null, .text(appID)]) > 0
    }

    package func recordSignature(
        _ signature: String, of appID: String, at nowMS: Int64, forgetBeforeMS: Int64
    ) throws -> Bool {
        try connection.run("DELETE FROM gateway_replays WHERE seen_at_ms < ?", [.integer(forgetBeforeMS)])
        guard
            try connection.query(
                "SELECT 1 FROM gateway_replays WHERE app_id = ? AND signature = ?", [.text(appID), .text(signature)]
            ).isEmpty
        else { return false }
        try connection.run(
            "INSERT INTO gateway_replays (app_id, signature, seen_at_ms) VALUES (?, ?, ?)",
            [.text(appID), .text(signature), .integer(nowMS)])
        return true
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
