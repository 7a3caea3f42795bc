import SwitchboardWire

/// One item of a device's E2EE queue as stored; the ciphertext is opaque bytes.
package struct StoredE2EEItem: Sendable, Equatable {
    package var deviceID: String
    package var sequence: Int64
    package var scope: MessageScope
    package var messageID: String
    package var kind: String
    package var senderUserID: String
    package var senderDeviceID: String
    package var ciphertext: [UInt8]
    package var createdAt: String

    package init(
        deviceID: String, sequence: Int64, scope: MessageScope, messageID: String, kind: String, senderUserID: String,
        senderDeviceID: String, ciphertext: [UInt8], createdAt: String
    ) {
        self.deviceID = deviceID
        self.sequence = sequence
        self.scope = scope
        self.messageID = messageID
        self.kind = kind
        self.senderUserID = senderUserID
        self.senderDeviceID = senderDeviceID
        self.ciphertext = ciphertext
        self.createdAt = createdAt
    }
}

/// A registered E2EE device and the newest sequence its queue gave out.
package struct StoredE2EEDevice: Sendable, Equatable {
    package var deviceID: String
    package var userID: String
    package var createdAt: String
    package var lastSequence: Int64
    /// Removed by its owner: it has no queue and cannot send or receive until registered again.
    package var removed: Bool

    package var wire: E2EEDevice { E2EEDevice(deviceId: deviceID, userId: userID, createdAt: createdAt) }

    package init(deviceID: String, userID: String, createdAt: String, lastSequence: Int64, removed: Bool) {
        self.deviceID = deviceID
        self.userID = userID
        self.createdAt = createdAt
        self.lastSequence = lastSequence
        self.removed = removed
    }
}

/// A send kept for its `clientId` replay: the scope, a digest of what was sent, the answer.
package struct StoredE2EESend: Sendable, Equatable {
    package var scopeID: String
    package var fingerprint: String
    package var result: String

    package init(scopeID: String, fingerprint: String, result: String) {
        self.scopeID = scopeID
        self.fingerprint = fingerprint
        self.result = result
    }
}

/// The per-device E2EE queues (tables `e2ee_devices`, `e2ee_items`, `e2ee_acks`,
/// `e2ee_sends`). Each device's items take the next number of its own sequence, in the
/// transaction that writes them: the device row is updated first, and on PostgreSQL its row
/// lock holds a second writer of the same device until the first commits, so a reader never
/// sees a number before a smaller one of the same device.
package protocol E2EERepository {
    func device(_ deviceID: String) throws -> StoredE2EEDevice?
    /// Registers a new device, or takes a removed one of the same user back (its sequence goes on).
    func register(_ deviceID: String, of userID: String, at timestamp: String) throws
    /// The registered (not removed) devices of these users, by user id, then device id.
    func devices(of userIDs: [String]) throws -> [StoredE2EEDevice]
    /// Removes a device: its queue goes, its row and sequence stay; false when it was not registered.
    func remove(_ deviceID: String) throws -> Bool
    /// Deletes every queued item and acknowledgement of the scope (a dissolved group).
    func dropScope(_ scope: MessageScope) throws
    /// Appends one item to the device's queue and returns its sequence.
    func append(_ item: StoredE2EEItem, atMS nowMS: Int64) throws -> Int64
    /// Up to `limit` items of the device in the scope after `sequence`, ascending.
    func items(
        of deviceID: String, in scope: MessageScope, after sequence: Int64, limit: Int
    ) throws -> [StoredE2EEItem]
    /// How far the device acknowledged the scope (0 when never).
    func acknowledged(by deviceID: String, in scope: MessageScope) throws -> Int64
    /// The device processed its items of the scope up to `sequence`: they go.
    func acknowledge(by deviceID: String, in scope: MessageScope, through sequence: Int64) throws
    /// Drops the user's devices' items of the scope (the user lost it).
    func dropItems(ofUser userID: String, in scope: MessageScope) throws
    func send(by userID: String, clientID: String) throws -> StoredE2EESend?
    func recordSend(by userID: String, clientID: String, _ send: StoredE2EESend, atMS nowMS: Int64) throws
    /// Deletes items written before `cutoffMS` (their scopes count as acknowledged through
    /// them, so a cursor behind them is told) and sends kept since before `sendsCutoffMS`;
    /// returns the items deleted.
    func prune(itemsBefore cutoffMS: Int64, sendsBefore sendsCutoffMS: Int64) throws -> Int
}

/// ``E2EERepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLE2EERepository: E2EERepository {
    package let connection: any SQLExecutor

    package func device(_ deviceID: String) throws -> StoredE2EEDevice? {
        try connection.query(
            "SELECT device_id, user_id, created_at, last_sequence, removed_at FROM e2ee_devices WHERE device_id = ?1",
            [.text(deviceID)]
        ).first.map(Self.device(from:))
    }

    package func register(_ deviceID: String, of userID: String, at timestamp: String) throws {
        try connection.run(
            """
            INSERT INTO e2ee_devices (device_id, user_id, created_at, last_sequence) VALUES (?1, ?2, ?3, 0)
            ON CONFLICT (device_id) DO UPDATE SET removed_at = NULL, created_at = excluded.created_at
            WHERE e2ee_devices.user_id = excluded.user_id AND e2ee_devices.removed_at IS NOT NULL
            """,
            [.text(deviceID), .text(userID), .text(timestamp)])
    }

    package func devices(of userIDs: [String]) throws -> [StoredE2EEDevice] {
        guard !userIDs.isEmpty else { return [] }
        let placeholders = (1...userIDs.count).map { "?\($0)" }.joined(separator: ", ")
        return try connection.query(
            """
            SELECT device_id, user_id, created_at, last_sequence, removed_at FROM e2ee_devices
            WHERE user_id IN (\(placeholders)) AND removed_at IS NULL ORDER BY user_id, device_id
            """,
            userIDs.map { .text($0) }
        ).map(Self.device(from:))
    }

    package func remove(_ deviceID: String) throws -> Bool {
        try connection.run("DELETE FROM e2ee_items WHERE device_id = ?1", [.text(deviceID)])
        try connection.run("DELETE FROM e2ee_acks WHERE device_id = ?1", [.text(deviceID)])
        return try connection.run(
            "UPDATE e2ee_devices SET removed_at = 'removed' WHERE device_id = ?1 AND removed_at IS NULL",
            [.text(deviceID)]) > 0
    }

    package func dropScope(_ scope: MessageScope) throws {
        try connection.run(
            "DELETE FROM e2ee_items WHERE scope_id = ?1 AND scope_kind = ?2", [.text(scope.id), .text(scope.kindName)])
        try connection.run("DELETE FROM e2ee_acks WHERE scope_id = ?1", [.text(scope.id)])
    }

    package func append(_ item: StoredE2EEItem, atMS nowMS: Int64) throws -> Int64 {
        guard
            let sequence = try connection.query(
                "UPDATE e2ee_devices SET last_sequence = last_sequence + 1 WHERE device_id = ?1 AND removed_at IS NULL RETURNING last_sequence",
                [.text(item.deviceID)]
            ).first?.int64("last_sequence")
        else {
            throw NoSuchE2EEDevice(deviceID: item.deviceID)
        }
        try connection.run(
            """
            INSERT INTO e2ee_items (device_id, sequence, scope_kind, scope_id, message_id, kind, sender_user_id, sender_device_id,
                ciphertext, created_at, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            """,
            [
                .text(item.deviceID), .integer(sequence), .text(item.scope.kindName), .text(item.scope.id),
                .text(item.messageID),
                .text(item.kind), .text(item.senderUserID), .text(item.senderDeviceID), .blob(item.ciphertext),
                .text(item.createdAt),
                .integer(nowMS),
            ])
        return sequence
    }

    package func items(
        of deviceID: String, in scope: MessageScope, after sequence: Int64, limit: Int
    ) throws -> [StoredE2EEItem] {
        try connection.query(
            """
            SELECT device_id, sequence, scope_kind, scope_id, message_id, kind, sender_user_id, sender_device_id, ciphertext, created_at
            FROM e2ee_items WHERE device_id = ?1 AND scope_id = ?2 AND scope_kind = ?3 AND sequence > ?4 ORDER BY sequence LIMIT ?5
            """,
            [.text(deviceID), .text(scope.id), .text(scope.kindName), .integer(sequence), .integer(Int64(limit))]
        ).compactMap { row in
            guard let scope = MessageScope(kindName: try row.string("scope_kind"), id: try row.string("scope_id"))
            else { return nil }
            return StoredE2EEItem(
                deviceID: try row.string("device_id"), sequence: try row.int64("sequence"), scope: scope,
                messageID: try row.string("message_id"),
                kind: try row.string("kind"), senderUserID: try row.string("sender_user_id"),
                senderDeviceID: try row.string("sender_device_id"),
                ciphertext: try row.blob("ciphertext"), createdAt: try row.string("created_at"))
        }
    }

    package func acknowledged(by deviceID: String, in scope: MessageScope) throws -> Int64 {
        try connection.query(
            "SELECT acked_through FROM e2ee_acks WHERE device_id = ?1 AND scope_id = ?2",
            [.text(deviceID), .text(scope.id)]
        )
        .first?.int64("acked_through") ?? 0
    }

    package func acknowledge(by deviceID: String, in scope: MessageScope, through sequence: Int64) throws {
        try connection.run(
            """
            INSERT INTO e2ee_acks (device_id, scope_id, acked_through) VALUES (?1, ?2, ?3)
            ON CONFLICT (device_id, scope_id) DO UPDATE SET acked_through = excluded.acked_through
            WHERE excluded.acked_through > e2ee_acks.acked_through
            """,
            [.text(deviceID), .text(scope.id), .integer(sequence)])
        try connection.run(
            "DELETE FROM e2ee_items WHERE device_id = ?1 AND scope_id = ?2 AND sequence <= ?3",
            [.text(deviceID), .text(scope.id), .integer(sequence)])
    }

    package func dropItems(ofUser userID: String, in scope: MessageScope) throws {
        try connection.run(
            "DELETE FROM e2ee_items WHERE scope_id = ?1 AND device_id IN (SELECT device_id FROM e2ee_devices WHERE user_id = ?2)",
            [.text(scope.id), .text(userID)])
    }

    package func send(by userID: String, clientID: String) throws -> StoredE2EESend? {
        try connection.query(
            "SELECT scope_id, fingerprint, result FROM e2ee_sends WHERE sender_user_id = ?1 AND client_id = ?2",
            [.text(userID), .text(clientID)]
        ).first.map {
            StoredE2EESend(
                scopeID: try $0.string("scope_id"), fingerprint: try $0.string("fingerprint"),
                result: try $0.string("result"))
        }
    }

    package func recordSend(by userID: String, clientID: String, _ send: StoredE2EESend, atMS nowMS: Int64) throws {
        try connection.run(
            """
            INSERT INTO e2ee_sends (sender_user_id, client_id, scope_id, fingerprint, result, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """,
            [
                .text(userID), .text(clientID), .text(send.scopeID), .text(send.fingerprint), .text(send.result),
                .integer(nowMS),
            ])
    }

    package func prune(itemsBefore cutoffMS: Int64, sendsBefore sendsCutoffMS: Int64) throws -> Int {
        try connection.run(
            """
            INSERT INTO e2ee_acks (device_id, scope_id, acked_through)
            SELECT device_id, scope_id, max(sequence) FROM e2ee_items WHERE created_at_ms < ?1 GROUP BY device_id, scope_id
            ON CONFLICT (device_id, scope_id) DO UPDATE SET acked_through = excluded.acked_through
            WHERE excluded.acked_through > e2ee_acks.acked_through
            """,
            [.integer(cutoffMS)])
        let deleted = try connection.run("DELETE FROM e2ee_items WHERE created_at_ms < ?1", [.integer(cutoffMS)])
        try connection.run("DELETE FROM e2ee_sends WHERE created_at_ms < ?1", [.integer(sendsCutoffMS)])
        return deleted
    }

    private static func device(from row: SQLiteRow) throws -> StoredE2EEDevice {
        StoredE2EEDevice(
            deviceID: try row.string("device_id"), userID: try row.string("user_id"),
            createdAt: try row.string("created_at"),
            lastSequence: try row.int64("last_sequence"), removed: try row.optionalString("removed_at") != nil)
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}

/// An item for a device that is not registered (or was removed) meanwhile.
package struct NoSuchE2EEDevice: Error, Equatable {
    package let deviceID: String

    package init(deviceID: String) {
        self.deviceID = deviceID
    }
}
