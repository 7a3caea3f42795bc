/// Every reason APNs documents, with the HTTP status it comes with, plus `unknown` for anything
/// new. One table for the provider (which reads answers) and the APNs emulator (which gives them).
///
/// ```swift
/// APNsReason.badDeviceToken.status   // 400
/// APNsReason.badDeviceToken.text     // "BadDeviceToken"
/// ```
public enum APNsReason: Sendable, Hashable {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    /// Not an APNs reason: the emulator's answer to a body that is not a JSON object. Apple
    /// documents no reason for malformed JSON, so the emulator names the problem plainly; a
    /// client treats it like any other permanent 400.
    case badPayload
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden, invalidProviderToken
    case missingProviderToken, unrelatedKeyIdInToken, badEnvironmentKeyIdInToken, badEnvironmentKeyInToken
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests, internalServerError, serviceUnavailable, shutdown
    case unknown(String)

    /// Every documented reason with its wire string.
    public static let documented: [(String, APNsReason)] = [
        ("BadCollapseId", .badCollapseId), ("BadDeviceToken", .badDeviceToken),
        ("BadExpirationDate", .badExpirationDate),
        ("BadMessageId", .badMessageId), ("BadPriority", .badPriority), ("BadTopic", .badTopic),
        ("DeviceTokenNotForTopic", .deviceTokenNotForTopic), ("DuplicateHeaders", .duplicateHeaders),
        ("IdleTimeout", .idleTimeout),
        ("InvalidPushType", .invalidPushType), ("MissingDeviceToken", .missingDeviceToken),
        ("MissingTopic", .missingTopic),
        ("PayloadEmpty", .payloadEmpty), ("TopicDisallowed", .topicDisallowed), ("BadCertificate", .badCertificate),
        ("BadCertificateEnvironment", .badCertificateEnvironment), ("ExpiredProviderToken", .expiredProviderToken),
        ("Forbidden", .forbidden), ("InvalidProviderToken", .invalidProviderToken),
        ("MissingProviderToken", .missingProviderToken),
        ("UnrelatedKeyIdInToken", .unrelatedKeyIdInToken), ("BadEnvironmentKeyIdInToken", .badEnvironmentKeyIdInToken),
        ("BadEnvironmentKeyInToken", .badEnvironmentKeyInToken), ("BadPath", .badPath),
        ("MethodNotAllowed", .methodNotAllowed),
        ("ExpiredToken", .expiredToken), ("Unregistered", .unregistered), ("PayloadTooLarge", .payloadTooLarge),
        ("TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates), ("TooManyRequests", .tooManyRequests),
        ("InternalServerError", .internalServerError), ("ServiceUnavailable", .serviceUnavailable),
        ("Shutdown", .shutdown),
        ("BadPayload", .badPayload),
    ]

    /// Parses APNs's reason string.
    public init(_ text: String) {
        self = Self.documented.first { $0.0 == text }?.1 ?? .unknown(text)
    }

    /// The wire string.
    public var text: String {
        if case .unknown(let text) = self { return text }
        return Self.documented.first { $0.1 == self }!.0
    }

    /// The HTTP status APNs answers with for this reason; nil for an unknown one.
    public var status: Int? {
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
        case .unknown: nil
        }
    }
}

/// What the dispatcher does with one APNs answer (or a transport failure).
public enum PushAction: Sendable, Equatable {
    /// Delivered: the job is done.
    case delivered
    /// Try again after the backoff, while the job has not expired.
    case retry
    /// The provider token was stale: mint a new one, then retry.
    case refreshProviderTokenAndRetry
    /// The device token is dead: delete it; the job fails.
    case deleteToken
    /// The token may belong to the other environment or topic: record it and fail the job;
    /// the token is deleted once the mismatch is confirmed (a second such answer).
    case reclassifyToken
    /// A request the server got wrong or a configuration problem: fail without retry.
    case fail
}

/// The one table from APNs status and reason to action (SPEC §3, Apple's retry rules).
public enum APNsResponsePolicy {
    /// The action for an HTTP status and the body's `reason` (nil for 200 or no body).
    public static func action(status: Int, reason: APNsReason?) -> PushAction {
        if status == 200 { return .delivered }
        switch reason {
        case .unregistered?, .expiredToken?: return .deleteToken
        case .badDeviceToken?, .deviceTokenNotForTopic?: return .reclassifyToken
        case .expiredProviderToken?: return .refreshProviderTokenAndRetry
        // TooManyProviderTokenUpdates: the token in use stays valid; the job simply waits its backoff.
        case .tooManyRequests?, .tooManyProviderTokenUpdates?, .internalServerError?, .serviceUnavailable?, .shutdown?,
            .idleTimeout?:
            return .retry
        default: break
        }
        switch status {
        case 410: return .deleteToken
        case 429, 500...599: return .retry
        default: return .fail
        }
    }
}
