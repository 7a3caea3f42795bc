import Foundation
import SwitchboardPushCore

/// The push APNs would accept: its device token (lowercase hex), the `apns-id` the client gave
/// (if any), the APNs headers worth showing the phone, and the JSON payload.
struct AcceptedPush: Sendable {
    var deviceToken: String
    var apnsID: String?
    var headers: [APNsHeader]
    var payload: [UInt8]
}

/// Validates a `POST /3/device/<token>` request as APNs does, in this order (the first failure
/// wins): path and method; duplicated APNs headers; the provider token; the device token; the
/// topic; the push type; priority, expiration, collapse id and `apns-id`; the payload.
///
/// The emulator stands in for the pushes the server sends: VoIP pushes to `<bundle>.voip` (any
/// topic ending in `.voip` when no bundle id is configured) with `apns-push-type: voip`, and
/// alert or background pushes (notices) to `<bundle>` itself.
/// ```swift
/// var validator = PushValidator(policy: .init(bundleID: "com.example.app"))
/// switch validator.validate(request, nowMilliseconds: now) { … }
/// ```
struct PushValidator {
    /// What pushes are checked against.
    struct Policy: Sendable {
        var bundleID: String?
        var token = ProviderTokenVerifier.Policy()
        /// 5120 bytes for VoIP pushes.
        var maxPayloadBytes = 5120
    }

    /// The outcome: the push, or the rejection with the `apns-id` the client sent (if valid).
    enum Outcome {
        case accepted(AcceptedPush)
        case rejected(APNsRejection, apnsID: String?, detail: String?)
    }

    static let pathPrefix = "/3/device/"

    /// The `apns-push-type` values APNs knows; all but `voip` are refused for the `.voip` topic.
    static let knownPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets", "controls",
    ]

    /// Headers that must appear at most once (APNs answers `DuplicateHeaders`).
    static let singleHeaders: [String] = [
        "authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id",
        "apns-id",
    ]

    /// Headers copied into the inbox message the phone reads (never `authorization`).
    static let forwardedHeaders: [String] = [
        "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id",
    ]

    let policy: Policy
    private var tokens: ProviderTokenVerifier

    init(policy: Policy) {
        self.policy = policy
        tokens = ProviderTokenVerifier(policy: policy.token)
    }

    mutating func validate(_ request: EmulatorRequest, nowMilliseconds: Int64) -> Outcome {
        let apnsID = request.value("apns-id").flatMap { Self.isCanonicalUUID($0) ? $0 : nil }
        func reject(_ reason: APNsReason, _ detail: String? = nil) -> Outcome {
            .rejected(APNsRejection(reason), apnsID: apnsID, detail: detail)
        }

        let path = request.pathWithoutQuery
        guard path.hasPrefix(Self.pathPrefix) else { return reject(.badPath) }
        guard request.method == "POST" else { return reject(.methodNotAllowed) }
        let rawToken = path.dropFirst(Self.pathPrefix.count)
        guard !rawToken.isEmpty else { return reject(.missingDeviceToken) }

        for name in Self.singleHeaders where request.values(name).count > 1 {
            return reject(.duplicateHeaders, "\(name) appears more than once")
        }

        if case .failure(let failure) = tokens.verify(
            authorization: request.value("authorization"), nowSeconds: nowMilliseconds / 1000)
        {
            return reject(failure.reason, failure.detail)
        }

        guard Self.isDeviceToken(rawToken) else { return reject(.badDeviceToken) }

        guard let topic = request.value("apns-topic"), !topic.isEmpty else { return reject(.missingTopic) }
        guard Self.isPlausibleTopic(topic) else { return reject(.badTopic, "topic \(topic) is not a bundle id") }
        // Two topics: `<bundle>.voip` takes VoIP pushes, `<bundle>` alert and background ones.
        let voipTopic = policy.bundleID.map { topic == $0 + ".voip" } ?? topic.hasSuffix(".voip")
        let appTopic = !voipTopic && (policy.bundleID.map { topic == $0 } ?? true)
        let pushType = request.value("apns-push-type")
        if voipTopic {
            guard pushType == "voip" else {
                return reject(.invalidPushType, "apns-push-type \(pushType ?? "(missing)") with topic \(topic)")
            }
        } else if appTopic, pushType == "alert" || pushType == "background" {
            // An ordinary push to the app (a missed-call alert, a background notice).
        } else if appTopic, pushType != "voip" {
            return reject(
                .invalidPushType, "apns-push-type \(pushType ?? "(missing)") with topic \(topic): alert or background")
        } else {
            let allowed =
                policy.bundleID.map { "\($0).voip (voip) or \($0) (alert, background)" } ?? "<bundle>.voip or <bundle>"
            return reject(.topicDisallowed, "only \(allowed) is allowed")
        }

        if let priority = request.value("apns-priority"), priority != "10", priority != "5" {
            return reject(.badPriority)
        }
        if let expiration = request.value("apns-expiration"), !Self.isUnsignedInteger(expiration) {
            return reject(.badExpirationDate)
        }
        if let collapseID = request.value("apns-collapse-id"), collapseID.utf8.count > 64 {
            return reject(.badCollapseId, "\(collapseID.utf8.count) bytes, more than 64")
        }
        if request.value("apns-id") != nil, apnsID == nil { return reject(.badMessageId) }

        guard request.bodyLength > 0 else { return reject(.payloadEmpty) }
        guard request.bodyLength <= policy.maxPayloadBytes, !request.bodyOverflowed else {
            return reject(.payloadTooLarge, "\(request.bodyLength) bytes, more than \(policy.maxPayloadBytes)")
        }
        guard (try? JSONSerialization.jsonObject(with: Data(request.body))) is [String: Any] else {
            return reject(.badPayload, "the payload is not a JSON object")
        }

        let forwarded = Self.forwardedHeaders.compactMap { name in request.value(name).map { APNsHeader(name, $0) } }
        return .accepted(
            AcceptedPush(deviceToken: rawToken.lowercased(), apnsID: apnsID, headers: forwarded, payload: request.body))
    }

    /// 64 or more hexadecimal digits, an even count, at most 200 (tokens have been 32 bytes, and
    /// Apple warns they may grow).
    static func isDeviceToken(_ text: Substring) -> Bool {
        let bytes = text.utf8
        return bytes.count >= 64 && bytes.count <= 200 && bytes.count % 2 == 0 && bytes.allSatisfy(isHexDigit)
    }

    /// Letters, digits, `.`, `-` and `_`, not starting or ending with a dot.
    static func isPlausibleTopic(_ topic: String) -> Bool {
        let bytes = Array(topic.utf8)
        guard bytes.count <= 255, bytes.first != UInt8(ascii: "."), bytes.last != UInt8(ascii: ".") else {
            return false
        }
        return bytes.allSatisfy { byte in
            isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// `8-4-4-4-12` lowercase hexadecimal digits.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) else { return false }
            }
        }
        return true
    }

    /// 1 to 19 decimal digits: UNIX seconds, or 0 for "deliver once".
    static func isUnsignedInteger(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...19).contains(bytes.count) && bytes.allSatisfy { (0x30...0x39).contains($0) }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
