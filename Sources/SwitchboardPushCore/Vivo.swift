import Foundation

/// vivo push (also iQOO): an `authToken` from `POST /message/auth` (JSON `appId`, `appKey`,
/// `timestamp` in ms, `sign` = lowercase hex MD5 of appId + appKey + timestamp + appSecret; it
/// lives 24 hours), then `POST /message/send` with the `authToken` header and a JSON body. vivo
/// has notification messages only: a ring and a missed call are system-class IM notifications
/// (`classification: 1`, `category: IM`), the data object in `clientCustomMap`, one `notifyId`
/// per call, `requestId` the job id (the same on every retry). Facts:
/// reference/push-delivery-facts.md §5 and vivo's server SDK.
public enum VivoMessage {
    public static let defaultURL = "https://api-push.vivo.com.cn"
    public static let authPath = "/message/auth"
    public static let sendPath = "/message/send"
    public static let authTokenLifetime: TimeInterval = 24 * 3600
    /// vivo's time-to-live bounds for one device (seconds): a ring's shorter window is raised to
    /// the minimum; the app still ignores a ring past the data's `expiresAt`.
    public static let ttlRange = 60...604_800

    /// The text the auth request's `sign` is the MD5 of.
    public static func signInput(
        appID: String, appKey: String, timestampMilliseconds: Int64, appSecret: String
    ) -> String {
        "\(appID)\(appKey)\(timestampMilliseconds)\(appSecret)"
    }

    public static func authBody(appID: String, appKey: String, timestampMilliseconds: Int64, sign: String) -> [UInt8] {
        let object: [String: Any] = [
            "appId": appID, "appKey": appKey, "timestamp": timestampMilliseconds, "sign": sign,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map(Array.init) ?? []
    }

    /// The send body for one registration id, or `nil` when `data` is not a ring or an ending.
    /// An ending replaces the ringing notification (the same `notifyId`): vivo has no silent
    /// message to take it down with. Text within vivo's width units (``VendorTextLimits/vivo``).
    public static func sendBody(
        appID: String, registrationID: String, data: [UInt8], ttlSeconds: Int, requestID: String
    ) -> [UInt8]? {
        guard let notification = VendorNotification.from(data: data, everyEnding: true)?.fitted(to: .vivo) else {
            return nil
        }
        let object: [String: Any] = [
            "appId": appID,
            "regId": registrationID,
            "notifyType": 4,
            "title": notification.title,
            "content": notification.content,
            "timeToLive": min(ttlRange.upperBound, max(ttlRange.lowerBound, ttlSeconds)),
            "skipType": 1,
            "networkType": -1,
            "classification": 1,
            "category": "IM",
            "clientCustomMap": notification.data,
            "notifyId": VendorNotification.notifyID(callID: notification.data["callId"] ?? ""),
            "requestId": requestID,
            "pushMode": 0,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map(Array.init)
    }

    /// The answer's `result` (0 is success) and whether it says the device is gone
    /// (`invalidUser.status` 1: no such regId, 2: uninstalled or notifications off, 3: offline
    /// for 90 days), if the body is vivo's JSON.
    public static func result(in body: [UInt8]) -> (code: Int, deviceGone: Bool)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let code = (object["result"] as? NSNumber)?.intValue
        else { return nil }
        let status = ((object["invalidUser"] as? [String: Any])?["status"] as? NSNumber)?.intValue
        return (code, status.map { (1...3).contains($0) } ?? false)
    }

    /// The auth answer's token, or why there is none.
    public static func authToken(in body: [UInt8]) -> Result<String, VivoAuthError> {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(VivoAuthError(description: "the auth answer is not JSON"))
        }
        let code = (object["result"] as? NSNumber)?.intValue ?? -1
        guard code == 0, let token = object["authToken"] as? String, !token.isEmpty else {
            return .failure(
                VivoAuthError(
                    description: "vivo auth answered \(code): \((object["desc"] as? String) ?? "no authToken")"))
        }
        return .success(token)
    }
}

public struct VivoAuthError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// vivo's answers, read from the body's `result` (recorded as the reason). `10000` for an
/// expired auth token and `10072` for a rate limit come from senders in the field.
public enum VivoResponsePolicy {
    /// The reason recorded when a successful answer says the device is gone.
    public static let deviceGone = "invalidUser"
    /// An expired auth token (10000) fetches a new one; an invalid regId (10302) or a gone
    /// device deletes the token; the day's quota, the rate and the auth rate (10070, 10072,
    /// 10250) are retried; wrong credentials or signature (10200–10207), another app's token
    /// (10094), a title, content or category vivo refuses (10056, 10058, 10096, 10097) fail.
    public static let table = ResultCodeTable(
        success: "0", authTokenRejected: ["10000"], invalidRegistration: ["10302", deviceGone],
        later: ["10072", "10250"], quota: ["10070"])

    public static func action(status: Int, reason: String?) -> PushAction {
        table.action(status: status, reason: reason)
    }
}
