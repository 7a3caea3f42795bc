/// Every reason string APNs documents for a rejected push, with the HTTP status it comes with,
/// plus the one reason of the emulator's own (``badPayload``).
///
/// ```swift
/// APNsReason.badDeviceToken.status        // 400
/// APNsReason.badDeviceToken.rawValue      // "BadDeviceToken"
/// ```
public enum APNsReason: String, Sendable, Hashable, CaseIterable {
    // 400
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    /// Not an APNs reason: the emulator's answer to a body that is not a JSON object. Apple
    /// documents no reason for malformed JSON, so the emulator names the problem plainly; a
    /// client should treat it like any other permanent 400.
    case badPayload = "BadPayload"
    // 403
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"
    // Others
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case expiredToken = "ExpiredToken"
    case unregistered = "Unregistered"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    /// The HTTP status APNs answers with for this reason.
    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .badPayload:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }
}

/// A rejected push as the emulator answers it: a status, a reason for the JSON body and, for
/// 410, the time (milliseconds since the epoch) APNs "learned" the token was invalid.
public struct APNsRejection: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// The `reason` member of the JSON body.
    public var reason: String
    /// The `timestamp` member (milliseconds since the epoch), present with 410.
    public var timestamp: Int64?

    /// Creates a rejection with an explicit status and reason (for scripted `respond` faults).
    public init(status: Int, reason: String, timestamp: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Creates a rejection for a documented reason, with the reason's own status.
    public init(_ reason: APNsReason, timestamp: Int64? = nil) {
        self.init(status: reason.status, reason: reason.rawValue, timestamp: timestamp)
    }

    /// The response body: `{"reason":"…"}` or `{"reason":"…","timestamp":…}`.
    public var body: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.member("reason", reason)
        if let timestamp { json.member("timestamp", timestamp) }
        json.endObject()
        return json.bytes
    }

    /// `"<status> <reason>"`, the key used in statistics.
    public var description: String { "\(status) \(reason)" }
}
