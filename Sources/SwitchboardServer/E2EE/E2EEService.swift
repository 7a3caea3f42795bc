import Foundation
import SwitchboardCrypto
import SwitchboardStore
import SwitchboardWire

/// The per-device queue of end-to-end-encrypted items (SPEC §9). The server stores ciphertext
/// opaque and never looks inside. A sender addresses one copy per recipient device; each copy
/// takes the next number of its device's own sequence, and each recipient user gets an `e2ee`
/// event in the same transaction. A device reads its own queue, per conversation or group,
/// at most 100 items at a time and without waiting; reading with `after=N` acknowledges its
/// items up to N there, which the server then deletes.
struct E2EEService: Sendable {
    let store: ServerStore

    static let pageSize = 100
    static let maxRecipients = 1000
    static let maxCiphertextBytes = 65_536
    /// How long a send's `clientId` answers replays.
    static let replayWindow: TimeInterval = 86_400

    // MARK: Devices

    func register(_ request: RegisterE2EEDevice, by principal: Principal) async throws -> (E2EEDevice, isNew: Bool) {
        let deviceID = try Self.deviceID(request.deviceId, field: "deviceId")
        let userID = principal.user.id
        return try await store.write { transaction in
            if let existing = try transaction.e2ee.device(deviceID) {
                // A device id stays its first account's, removed or not.
                guard existing.userID == userID else {
                    throw APIError(.deviceIdTaken, "another account registered this device id", field: "deviceId")
                }
                if !existing.removed { return (existing.wire, false) }
            }
            try transaction.e2ee.register(deviceID, of: userID, at: transaction.timestamp)
            return (E2EEDevice(deviceId: deviceID, userId: userID, createdAt: transaction.timestamp), true)
        }
    }

    func devices(of principal: Principal) async throws -> E2EEDeviceList {
        let userID = principal.user.id
        return try await store.snapshot { E2EEDeviceList(devices: try $0.e2ee.devices(of: [userID]).map(\.wire)) }
    }

    /// Forgets one of the caller's devices and its queue; 404 for any other id.
    func remove(_ deviceID: String, by principal: Principal) async throws {
        let userID = principal.user.id
        try await store.write { transaction in
            guard let device = try transaction.e2ee.device(deviceID.lowercased()), device.userID == userID,
                !device.removed
            else {
                throw APIError.notFound("no such device")
            }
            _ = try transaction.e2ee.remove(device.deviceID)
        }
    }

    /// Every participant's devices (the caller's other devices included): whom a sender addresses.
    func devices(in scope: MessageScope, for principal: Principal) async throws -> E2EEDeviceList {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            let participants = try LiveLocationService.participants(
                of: scope, for: userID, changing: false, in: snapshot)
            return E2EEDeviceList(devices: try snapshot.e2ee.devices(of: participants).map(\.wire))
        }
    }

    // MARK: Sending

    /// Queues one copy per recipient device; true when new (false: a `clientId` replay).
    func send(
        _ request: SendE2EEMessage, in scope: MessageScope, by principal: Principal
    ) async throws -> (E2EESendResult, isNew: Bool) {
        let userID = principal.user.id
        let message = try Self.validated(request)
        let fingerprint = Self.fingerprint(message, in: scope)
        return try await store.write { transaction in
            let e2ee = transaction.e2ee
            if let clientID = message.clientID, let earlier = try e2ee.send(by: userID, clientID: clientID) {
                guard earlier.scopeID == scope.id, earlier.fingerprint == fingerprint,
                    let result = try? JSONDecoder().decode(E2EESendResult.self, from: Data(earlier.result.utf8))
                else {
                    throw APIError(
                        .clientIdReused, "'clientId' was already used for a different send", field: "clientId")
                }
                return (result, false)
            }
            let participants = try LiveLocationService.participants(
                of: scope, for: userID, changing: true, in: transaction)
            guard let sender = try e2ee.device(message.senderDeviceID), !sender.removed else {
                throw APIError(.notFound, "no such device", field: "senderDeviceId")
            }
            guard sender.userID == userID else {
                throw APIError(.notYourDevice, "'senderDeviceId' is another account's device", field: "senderDeviceId")
            }
            try transaction.requireQuota(
                ServerLimits.messageKey(userID), transaction.limits.messagesPerUser, what: "messages")
            // The participants' registered devices, in one read: whom a copy may go to.
            let addressable = Dictionary(
                uniqueKeysWithValues: try e2ee.devices(of: participants).map { ($0.deviceID, $0) })
            var recipientUsers: [String] = []
            var deliveries: [E2EEDelivery] = []
            let messageID = transaction.newID(), nowMS = CallStore.milliseconds(transaction.date)
            for (index, recipient) in message.recipients.enumerated() {
                guard let device = addressable[recipient.deviceID] else {
                    throw APIError(
                        .notFound, "not a device of this \(Self.place(scope))'s participants: \(recipient.deviceID)",
                        field: "recipients[\(index)].deviceId")
                }
                let sequence: Int64
                do {
                    sequence = try e2ee.append(
                        StoredE2EEItem(
                            deviceID: device.deviceID, sequence: 0, scope: scope, messageID: messageID,
                            kind: message.kind, senderUserID: userID,
                            senderDeviceID: sender.deviceID, ciphertext: recipient.ciphertext,
                            createdAt: transaction.timestamp),
                        atMS: nowMS)
                } catch let missing as NoSuchE2EEDevice {
                    throw APIError(.notFound, "no such device: \(missing.deviceID)")
                }
                deliveries.append(E2EEDelivery(deviceId: device.deviceID, sequence: sequence))
                recipientUsers.append(device.userID)
            }
            try transaction.appendEvent(
                .e2ee, to: recipientUsers, conversationID: scope.conversationID, groupID: scope.groupID)
            let result = E2EESendResult(messageId: messageID, deliveries: deliveries, createdAt: transaction.timestamp)
            if let clientID = message.clientID {
                let text = String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
                try e2ee.recordSend(
                    by: userID, clientID: clientID,
                    StoredE2EESend(scopeID: scope.id, fingerprint: fingerprint, result: text), atMS: nowMS)
            }
            return (result, true)
        }
    }

    // MARK: Reading

    /// The device's items of the scope after `after`, at most 100; `after` acknowledges what
    /// came before. 403 for another account's device; 410 `CURSOR_EXPIRED` for an `after`
    /// behind what was already acknowledged (those items are gone); 400 for one beyond the
    /// device's newest sequence (it would acknowledge items not written yet).
    func events(
        in scope: MessageScope, deviceID rawDeviceID: String?, after rawAfter: String?, for principal: Principal
    ) async throws -> E2EEEventsPage {
        guard let rawDeviceID else {
            throw APIError.validation("query parameter 'deviceId' is required", field: "deviceId")
        }
        let deviceID = try Self.deviceID(rawDeviceID, field: "deviceId")
        let after = try rawAfter.map { text throws(APIError) in try EventRoutes.cursor(text, name: "after") } ?? 0
        let userID = principal.user.id
        let check: @Sendable (any Repositories) throws -> Bool = { repositories in
            _ = try LiveLocationService.participants(of: scope, for: userID, changing: false, in: repositories)
            guard let device = try repositories.e2ee.device(deviceID), !device.removed else {
                throw APIError(.notFound, "no such device", field: "deviceId")
            }
            guard device.userID == userID else {
                throw APIError(.notYourDevice, "a device reads only its own queue", field: "deviceId")
            }
            guard after <= device.lastSequence else {
                throw APIError.validation(
                    "'after' is beyond the device's newest sequence (\(device.lastSequence))", field: "after")
            }
            let acknowledged = try repositories.e2ee.acknowledged(by: deviceID, in: scope)
            guard after >= acknowledged else {
                throw APIError(
                    .cursorExpired,
                    "items up to \(acknowledged) were acknowledged and deleted; 'after' must be at least that",
                    field: "after")
            }
            return after > acknowledged
        }
        let read: @Sendable (any Repositories) throws -> E2EEEventsPage = { repositories in
            let rows = try repositories.e2ee.items(of: deviceID, in: scope, after: after, limit: Self.pageSize + 1)
            let items = rows.prefix(Self.pageSize).map(Self.wire)
            return E2EEEventsPage(
                items: items, cursor: items.last?.sequence ?? after, hasMore: rows.count > Self.pageSize)
        }
        // A read that moves the acknowledgement writes; the rest only read.
        let moves = try await store.snapshot { try check($0) }
        guard moves else { return try await store.snapshot { try read($0) } }
        return try await store.write { transaction in
            if try check(transaction) { try transaction.e2ee.acknowledge(by: deviceID, in: scope, through: after) }
            return try read(transaction)
        }
    }

    /// Deletes items older than `retention` (unread for that long) and expired replay records.
    func prune(olderThan retention: TimeInterval) async throws -> Int {
        try await store.write { transaction in
            try transaction.e2ee.prune(
                itemsBefore: CallStore.milliseconds(transaction.date.addingTimeInterval(-retention)),
                sendsBefore: CallStore.milliseconds(transaction.date.addingTimeInterval(-Self.replayWindow)))
        }
    }

    // MARK: Validation

    struct ValidSend {
        var senderDeviceID: String
        var kind: String
        var clientID: String?
        var recipients: [(deviceID: String, ciphertext: [UInt8])]
    }

    static func validated(_ request: SendE2EEMessage) throws(APIError) -> ValidSend {
        let sender = try deviceID(request.senderDeviceId, field: "senderDeviceId")
        let kind = request.kind.utf8
        guard (1...32).contains(kind.count), let first = kind.first, (97...122).contains(first),
            kind.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 95 })
        else {
            throw APIError.validation(
                "'kind' must be 1 to 32 lowercase letters, digits or '_', starting with a letter", field: "kind")
        }
        if let clientID = request.clientId, !(1...64).contains(clientID.unicodeScalars.count) {
            throw APIError.validation("'clientId' must be 1 to 64 characters (Unicode code points)", field: "clientId")
        }
        guard (1...maxRecipients).contains(request.recipients.count) else {
            throw APIError.validation("'recipients' must hold 1 to \(maxRecipients) devices", field: "recipients")
        }
        var seen = Set<String>()
        var recipients: [(String, [UInt8])] = []
        for (index, recipient) in request.recipients.enumerated() {
            let id = try deviceID(recipient.deviceId, field: "recipients[\(index)].deviceId")
            guard seen.insert(id).inserted else {
                throw APIError.validation("device \(id) is listed twice", field: "recipients[\(index)].deviceId")
            }
            guard Self.isPaddedBase64(recipient.ciphertext), let bytes = Data(base64Encoded: recipient.ciphertext),
                (1...maxCiphertextBytes).contains(bytes.count)
            else {
                throw APIError.validation(
                    "'ciphertext' must be base64 of 1 to \(maxCiphertextBytes) bytes",
                    field: "recipients[\(index)].ciphertext")
            }
            recipients.append((id, Array(bytes)))
        }
        return ValidSend(senderDeviceID: sender, kind: request.kind, clientID: request.clientId, recipients: recipients)
    }

    /// Standard padded base64 exactly as the document's pattern has it: whole groups of four of
    /// `A-Z a-z 0-9 + /`, the last one ending in at most two `=` (Foundation's decoder alone also
    /// takes `====` and a `=` in the middle).
    static func isPaddedBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2 else { return false }
        return bytes.dropLast(padding).allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 43
                || byte == 47
        }
    }

    /// A device id: a UUID, lowercased.
    static func deviceID(_ text: String, field: String) throws(APIError) -> String {
        guard UUID(uuidString: text) != nil else {
            throw APIError.validation("'\(field)' must be a UUID", field: field)
        }
        return text.lowercased()
    }

    /// What a replay must match: the scope, kind, sender device and every copy.
    static func fingerprint(_ send: ValidSend, in scope: MessageScope) -> String {
        var bytes = Array("\(scope.kindName)\n\(scope.id)\n\(send.kind)\n\(send.senderDeviceID)\n".utf8)
        for recipient in send.recipients {
            bytes += Array("\(recipient.deviceID)\n".utf8) + SHA256.hash(recipient.ciphertext)
        }
        return SHA256.hex(bytes)
    }

    private static func wire(_ item: StoredE2EEItem) -> E2EEItem {
        E2EEItem(
            sequence: item.sequence, messageId: item.messageID, kind: item.kind, senderUserId: item.senderUserID,
            senderDeviceId: item.senderDeviceID, ciphertext: Data(item.ciphertext).base64EncodedString(),
            conversationId: item.scope.conversationID, groupId: item.scope.groupID, createdAt: item.createdAt)
    }

    private static func place(_ scope: MessageScope) -> String {
        if case .group = scope { "group" } else { "conversation" }
    }
}
