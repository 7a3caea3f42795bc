import Foundation

/// FCM HTTP v1 messages for rings (SPEC §7): a high-priority data message whose values are all
/// strings, living no longer than the ring window, collapsed per call.
public enum FCMMessage {
    /// The largest data payload FCM accepts.
    public static let maxDataBytes = 4096

    /// Why a ring cannot be built.
    public enum Problem: Error, Sendable, Equatable {
        case payloadTooLarge(Int)
        case expired
    }

    /// The `data` object of a ring: `type: call` and the VoIP payload's fields, as strings;
    /// `appData` (a gateway app's own strings) as the JSON text of `ext`.
    public static func ringData(
        callID: String, scopeKind: String, scopeID: String, mode: String, callerName: String, groupName: String?,
        expiresAt: Date, now: Date, appData: [String: String]? = nil, locale: String? = nil
    ) throws(Problem) -> [UInt8] {
        guard expiresAt > now else { throw .expired }
        var data: [String: String] = [
            "type": "call", "callId": callID, "scopeKind": scopeKind, "scopeId": scopeID, "mode": mode,
            "callerName": callerName,
            "expiresAt": String(Int64(expiresAt.timeIntervalSince1970.rounded(.down))),
        ]
        if let groupName { data["groupName"] = groupName }
        if let locale { data["locale"] = PushText.language(for: locale) }
        if let appData,
            let text = try? JSONSerialization.data(
                withJSONObject: appData, options: [.sortedKeys, .withoutEscapingSlashes])
        {
            data["ext"] = String(decoding: text, as: UTF8.self)
        }
        let bytes =
            (try? JSONSerialization.data(withJSONObject: data, options: [.sortedKeys, .withoutEscapingSlashes])).map(
                Array.init) ?? []
        guard bytes.count <= maxDataBytes else { throw .payloadTooLarge(bytes.count) }
        return bytes
    }

    /// The `data` object of a notice: `type: call_ended`, the call and why its ring ended
    /// (`answered_elsewhere`, `declined_elsewhere`, `cancelled`, `missed`).
    public static func endedData(
        callID: String, scopeKind: String, scopeID: String, callerName: String, reason: String, expiresAt: Date,
        now: Date, locale: String? = nil
    ) throws(Problem) -> [UInt8] {
        try noticeData(
            PushNotice(
                callID: callID, scopeKind: scopeKind, scopeID: scopeID, callerName: callerName, reason: reason,
                jobID: "", expiresAt: expiresAt, now: now, locale: locale))
    }

    /// The `data` object of any notice: `call_ended` (an ending, as ``endedData``) or
    /// `call_incoming` (a call that does not ring this device: with its `mode` and `groupName`).
    public static func noticeData(_ notice: PushNotice) throws(Problem) -> [UInt8] {
        guard notice.expiresAt > notice.now else { throw .expired }
        var data = [
            "type": notice.dataType, "callId": notice.callID, "scopeKind": notice.scopeKind,
            "scopeId": notice.scopeID, "callerName": notice.callerName, "reason": notice.reason,
        ]
        if let mode = notice.mode { data["mode"] = mode }
        if let groupName = notice.groupName { data["groupName"] = groupName }
        if let locale = notice.locale { data["locale"] = PushText.language(for: locale) }
        let bytes =
            (try? JSONSerialization.data(withJSONObject: data, options: [.sortedKeys, .withoutEscapingSlashes])).map(
                Array.init) ?? []
        guard bytes.count <= maxDataBytes else { throw .payloadTooLarge(bytes.count) }
        return bytes
    }

    /// The request body for one token: `data` is a stored ``ringData`` object; `ttlSeconds` is
    /// what is left of the ring window at the moment of sending (FCM drops the message after it).
    public static func body(token: String, data: [UInt8], collapseKey: String, ttlSeconds: Int) -> [UInt8] {
        var body = Array(#"{"message":{"token":"#.utf8)
        body += jsonString(token)
        body += Array(#","data":"#.utf8)
        body += data.isEmpty ? Array("{}".utf8) : data
        body += Array(#","android":{"priority":"HIGH","ttl":""#.utf8)
        body += Array("\(max(0, ttlSeconds))s".utf8)
        body += Array(#"","collapse_key":"#.utf8)
        body += jsonString(collapseKey)
        body += Array("}}}".utf8)
        return body
    }

    private static func jsonString(_ text: String) -> [UInt8] {
        (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])).map {
            Array($0.dropFirst().dropLast())
        } ?? Array("\"\"".utf8)
    }
}

/// FCM's error answer, `{"error":{"code":…,"message":…,"status":…,"details":[{"errorCode":…}]}}`.
public struct FCMError: Sendable, Equatable {
    /// The FCM error code from `details` (`UNREGISTERED`, `QUOTA_EXCEEDED`, …), else the
    /// canonical `status` (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, …).
    public var code: String?
    public var message: String?

    /// The reason recorded for an `INVALID_ARGUMENT` that says the token itself is not valid.
    public static let invalidRegistrationToken = "INVALID_ARGUMENT (registration token)"

    public init(code: String?, message: String?) {
        self.code = code
        self.message = message
    }

    /// Reads an error body; `nil` fields for anything else.
    public init(body: [UInt8]) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else {
            self.init(code: nil, message: nil)
            return
        }
        let details = (error["details"] as? [[String: Any]]) ?? []
        let specific = details.lazy.compactMap { $0["errorCode"] as? String }.first
        self.init(code: specific ?? (error["status"] as? String), message: error["message"] as? String)
    }

    /// The reason to record: the code, sharpened for an invalid token.
    public var reason: String? {
        if code == "INVALID_ARGUMENT", let message, message.contains("not a valid FCM registration token") {
            return Self.invalidRegistrationToken
        }
        return code
    }
}

/// The one table from FCM's status and reason to action (the reference's FCM error table).
public enum FCMResponsePolicy {
    /// FCM asks senders over quota to wait at least a minute before retrying (a ring's window
    /// is shorter: such a ring is not retried, rather than making the quota worse).
    public static let quotaRetryFloor: TimeInterval = 60

    public static func action(status: Int, reason: String?) -> PushAction {
        if status == 200 { return .delivered }
        switch reason {
        case "UNREGISTERED"?, FCMError.invalidRegistrationToken?, "SENDER_ID_MISMATCH"?: return .deleteToken
        case "UNAUTHENTICATED"?: return .refreshProviderTokenAndRetry
        case "QUOTA_EXCEEDED"?, "UNAVAILABLE"?, "INTERNAL"?: return .retry
        // A problem with the APNs or web credentials uploaded to Firebase, or a request we got
        // wrong: retrying cannot help, and the token stays.
        case "THIRD_PARTY_AUTH_ERROR"?, "INVALID_ARGUMENT"?, "PERMISSION_DENIED"?: return .fail
        default: break
        }
        // A bare 404 is a wrong URL or project as often as a dead token: only FCM's own
        // UNREGISTERED (above) deletes one.
        switch status {
        case 401: return .refreshProviderTokenAndRetry
        case 429, 500...599: return .retry
        default: return .fail
        }
    }
}

/// When to fetch a new OAuth2 access token (FCM, and the vendors that work the same way): the
/// service says how long one lives; it is replaced `refreshMargin` before that, and at once when
/// the service rejected it. Many requests rejected with the same token cause one fetch, not a
/// storm: a rejection of a token already replaced changes nothing. Pure: time is an input.
public struct AccessTokenClock: Sendable, Equatable {
    /// How long before its expiry a token is replaced.
    public static let refreshMargin: TimeInterval = 5 * 60

    /// When the current token was issued and when it expires (`nil` before the first).
    public private(set) var issuedAt: Date?
    public private(set) var expiresAt: Date?
    private var rejected = false

    public init() {}

    /// Whether the current token may still be sent: not expired and not rejected. While it is,
    /// a due replacement is fetched beside the requests instead of in front of them.
    public func isUsable(now: Date) -> Bool {
        guard let expiresAt, !rejected else { return false }
        return now < expiresAt
    }

    /// Whether a new token must be fetched now.
    public func needsNewToken(now: Date) -> Bool {
        guard let expiresAt else { return true }
        return rejected || now >= expiresAt.addingTimeInterval(-Self.refreshMargin)
    }

    /// Records a fetched token that lives `lifetime` seconds from `now` (`expires_in`).
    public mutating func issued(at now: Date, lifetime: TimeInterval) {
        issuedAt = now
        expiresAt = now.addingTimeInterval(max(0, lifetime))
        rejected = false
    }

    /// The service rejected the token issued at `tokenIssuedAt`: the next request fetches a new
    /// one, unless that token was already replaced.
    public mutating func rejected(tokenIssuedAt: Date) {
        if tokenIssuedAt == issuedAt { rejected = true }
    }
}
