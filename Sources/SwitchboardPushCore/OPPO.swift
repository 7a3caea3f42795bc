import Foundation

/// OPPO push (HeyTap, also OnePlus and realme): an `auth_token` from `POST /server/v1/auth`
/// (form `app_key`, `timestamp` in ms, `sign` = lowercase hex SHA-256 of appKey + timestamp +
/// masterSecret; it lives 24 hours), then `POST /server/v1/message/notification/unicast` with
/// form fields `auth_token` and `message` (JSON). OPPO has notification messages only: a ring
/// and a missed call are notifications on the app's call channel (`channel_id`, which the app
/// must have registered), the data object in `action_parameters`, one `notify_id` per call.
/// Facts: reference/push-delivery-facts.md §5 and OPPO's server SDK.
public enum OPPOMessage {
    /// The API hosts: China (the default) and overseas (`oppoURL`).
    public static let chinaURL = "https://api.push.oppomobile.com"
    public static let overseasURL = "https://api-intl.push.oppomobile.com"
    public static let authPath = "/server/v1/auth"
    public static let unicastPath = "/server/v1/message/notification/unicast"
    /// How long an auth token lives.
    public static let authTokenLifetime: TimeInterval = 24 * 3600
    /// The longest `off_line_ttl` OPPO takes (10 days).
    public static let maxOfflineTTL = 864_000

    /// The text the auth request's `sign` is the SHA-256 of.
    public static func signInput(appKey: String, timestampMilliseconds: Int64, masterSecret: String) -> String {
        "\(appKey)\(timestampMilliseconds)\(masterSecret)"
    }

    /// The unicast form for one registration id, or `nil` when `data` is not a ring or an
    /// ending. An ending replaces the ringing notification (the same `notify_id`): OPPO has no
    /// silent message to take it down with. Text within OPPO's limits (``VendorTextLimits/oppo``).
    public static func unicastForm(
        authToken: String, registrationID: String, data: [UInt8], ttlSeconds: Int, channelID: String
    ) -> [UInt8]? {
        guard let notification = VendorNotification.from(data: data, everyEnding: true)?.fitted(to: .oppo) else {
            return nil
        }
        let message: [String: Any] = [
            "target_type": 2,
            "target_value": registrationID,
            "notification": [
                "title": notification.title,
                "content": notification.content,
                "click_action_type": 0,
                "action_parameters": notification.dataJSON,
                // OPPO takes no message without a registered channel: a quiet notice goes on
                // the call channel too (docs/push.md says so).
                "channel_id": channelID,
                "category": "IM",
                "notify_level": 2,
                "off_line": true,
                "off_line_ttl": min(maxOfflineTTL, max(1, ttlSeconds)),
                "notify_id": VendorNotification.notifyID(callID: notification.data["callId"] ?? ""),
            ] as [String: Any],
        ]
        let json =
            (try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return FormEncoding.body([("auth_token", authToken), ("message", json)])
    }

    /// The answer's `code` (0 is success), if the body is OPPO's JSON.
    public static func code(in body: [UInt8]) -> Int? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return nil }
        return (object["code"] as? NSNumber)?.intValue
    }
}

/// OPPO's answers, read from the body's `code` (recorded as the reason), after OPPO's table of
/// common return codes. `10000` for a registration id that is not this app's device comes from
/// senders in the field, not from OPPO's pages.
public enum OPPOResponsePolicy {
    /// A wrong, expired or missing auth token (11, 29) fetches a new one; unavailable, flow
    /// control, call limits and the day's quota (-1, -2, 13, 33, 55) are retried; a wrong app
    /// key, signature or argument, a blacklisted or disabled app (12, 14–19, 26–28, 30, 40, 41,
    /// 67) fails the job.
    public static let table = ResultCodeTable(
        success: "0", authTokenRejected: ["11", "29"], invalidRegistration: ["10000"], later: ["-1", "-2", "13", "55"],
        quota: ["33"])

    public static func action(status: Int, reason: String?) -> PushAction {
        table.action(status: status, reason: reason)
    }
}
