/// A device that takes part in end-to-end encryption: it has its own queue of ciphertext.
public struct E2EEDevice: Codable, Sendable, Equatable {
    /// The id the app chose (a UUID); one user's only.
    public var deviceId: String
    public var userId: String
    public var createdAt: String

    public init(deviceId: String, userId: String, createdAt: String) {
        self.deviceId = deviceId
        self.userId = userId
        self.createdAt = createdAt
    }
}

/// `POST /e2ee/devices` body.
public struct RegisterE2EEDevice: Codable, Sendable, Equatable {
    public var deviceId: String

    public init(deviceId: String) { self.deviceId = deviceId }
}

/// A list of E2EE devices: one's own (`GET /e2ee/devices`) or every participant's of a
/// conversation or group (`GET /e2ee/{conversations|groups}/{id}/devices`), by user, then device.
public struct E2EEDeviceList: Codable, Sendable, Equatable {
    public var devices: [E2EEDevice]

    public init(devices: [E2EEDevice]) { self.devices = devices }
}

/// One recipient device's copy of an encrypted message.
public struct E2EERecipient: Codable, Sendable, Equatable {
    public var deviceId: String
    /// The ciphertext for this device, base64 (standard alphabet, padded): 1–65536 bytes.
    public var ciphertext: String

    public init(deviceId: String, ciphertext: String) {
        self.deviceId = deviceId
        self.ciphertext = ciphertext
    }
}

/// `POST /e2ee/{conversations|groups}/{id}/messages` body: ciphertext addressed per recipient
/// device, stored opaque.
public struct SendE2EEMessage: Codable, Sendable, Equatable {
    /// The sender's own registered device.
    public var senderDeviceId: String
    /// What the ciphertext is, e.g. MLS `welcome`, `commit`, `proposal`, `application`:
    /// lowercase letters, digits and `_`, 1–32, starting with a letter.
    public var kind: String
    /// 1–1000 devices of the scope's participants, each once.
    public var recipients: [E2EERecipient]
    /// Optional idempotency key: resending the same one answers the first send's result.
    public var clientId: String?

    public init(senderDeviceId: String, kind: String, recipients: [E2EERecipient], clientId: String? = nil) {
        self.senderDeviceId = senderDeviceId
        self.kind = kind
        self.recipients = recipients
        self.clientId = clientId
    }
}

/// Where one recipient's copy went in its device's queue.
public struct E2EEDelivery: Codable, Sendable, Equatable {
    public var deviceId: String
    public var sequence: Int64

    public init(deviceId: String, sequence: Int64) {
        self.deviceId = deviceId
        self.sequence = sequence
    }
}

/// The answer of a send: the message id shared by every copy, and each copy's place.
public struct E2EESendResult: Codable, Sendable, Equatable {
    public var messageId: String
    public var deliveries: [E2EEDelivery]
    public var createdAt: String

    public init(messageId: String, deliveries: [E2EEDelivery], createdAt: String) {
        self.messageId = messageId
        self.deliveries = deliveries
        self.createdAt = createdAt
    }
}

/// One item of a device's queue.
public struct E2EEItem: Codable, Sendable, Equatable {
    /// Strictly increasing per recipient device.
    public var sequence: Int64
    /// The message id, the same for every recipient of one send.
    public var messageId: String
    public var kind: String
    public var senderUserId: String
    public var senderDeviceId: String
    /// Base64 (standard alphabet, padded), exactly as sent.
    public var ciphertext: String
    public var conversationId: String?
    public var groupId: String?
    public var createdAt: String

    public init(
        sequence: Int64, messageId: String, kind: String, senderUserId: String, senderDeviceId: String,
        ciphertext: String,
        conversationId: String?, groupId: String?, createdAt: String
    ) {
        self.sequence = sequence
        self.messageId = messageId
        self.kind = kind
        self.senderUserId = senderUserId
        self.senderDeviceId = senderDeviceId
        self.ciphertext = ciphertext
        self.conversationId = conversationId
        self.groupId = groupId
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case sequence, messageId, kind, senderUserId, senderDeviceId, ciphertext, conversationId, groupId, createdAt
    }

    /// Writes `null` for the scope that does not apply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(messageId, forKey: .messageId)
        try container.encode(kind, forKey: .kind)
        try container.encode(senderUserId, forKey: .senderUserId)
        try container.encode(senderDeviceId, forKey: .senderDeviceId)
        try container.encode(ciphertext, forKey: .ciphertext)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// The answer of `GET /e2ee/{conversations|groups}/{id}/events`: at most 100 items of the
/// device's queue in this scope, ascending by `sequence`; `cursor` is the last one's sequence
/// (or `after` when empty), and `hasMore` says whether more wait. Asking with `after=N`
/// acknowledges every item up to `N`: the server then deletes them.
public struct E2EEEventsPage: Codable, Sendable, Equatable {
    public var items: [E2EEItem]
    public var cursor: Int64
    public var hasMore: Bool

    public init(items: [E2EEItem], cursor: Int64, hasMore: Bool) {
        self.items = items
        self.cursor = cursor
        self.hasMore = hasMore
    }
}
