import Foundation

/// Xiaomi MiPush (`POST /v3/message/regid`, form fields, `Authorization: key=<AppSecret>`) for
/// rings on Xiaomi, Redmi and POCO phones. A ring and a missed call are notification messages
/// (MIUI wakes a killed app only for those) carrying the data object in `payload`, under one
/// `notify_id` per call so the missed call replaces the ringing notification; the other endings
/// are pass-through messages (`pass_through=1`) the running app takes its notification down on.
/// Facts: reference/push-delivery-facts.md §5.
public enum XiaomiMessage {
    /// The API hosts by region (`xiaomiRegion`): China, and the global service's regions.
    public static let regionHosts: [String: String] = [
        "cn": "https://api.xmpush.xiaomi.com",
        "sgp": "https://sgp-api.xmpush.global.xiaomi.com",
        "fr": "https://fr-api.xmpush.global.xiaomi.com",
        "ru": "https://ru-api.xmpush.global.xiaomi.com",
        "idmb": "https://idmb-api.xmpush.global.xiaomi.com",
    ]

    public static let path = "/v3/message/regid"

    /// The form for one registration id; `data` is a stored ``FCMMessage`` data object;
    /// `ttlMilliseconds` what is left of its window. `channelID`: the app's notification channel
    /// for calls (Android 8+), when it registered one with Xiaomi.
    public static func form(
        registrationID: String, packageName: String, data: [UInt8], ttlMilliseconds: Int64, channelID: String?
    ) -> [UInt8] {
        var fields: [(String, String)] = [
            ("registration_id", registrationID), ("restricted_package_name", packageName),
            // At least 1 ms: Xiaomi may read 0 as "not set" (its default is two weeks).
            ("time_to_live", String(max(1, ttlMilliseconds))),
        ]
        if let notification = VendorNotification.from(data: data)?.fitted(to: .xiaomi) {
            fields += [
                ("pass_through", "0"), ("notify_type", "-1"), ("title", notification.title),
                ("description", notification.content),
                ("payload", notification.dataJSON),
                ("notify_id", String(VendorNotification.notifyID(callID: notification.data["callId"] ?? ""))),
            ]
            // A quiet notice is no call: not on the app's call channel (with its ringtone).
            if let channelID, !channelID.isEmpty, !notification.isQuiet {
                fields.append(("extra.channel_id", channelID))
            }
        } else {
            fields += [
                ("pass_through", "1"),
                ("payload", String(decoding: data.isEmpty ? Array("{}".utf8) : data, as: UTF8.self)),
            ]
        }
        return FormEncoding.body(fields)
    }

    /// The answer's `code` (0 is success), and whether `registrationID` is among the
    /// `data.bad_regids` of an otherwise successful answer, if the body is Xiaomi's JSON.
    public static func result(in body: [UInt8], registrationID: String) -> (code: Int, badRegistration: Bool)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let code = (object["code"] as? NSNumber)?.intValue
        else { return nil }
        let bad =
            ((object["data"] as? [String: Any])?["bad_regids"] as? String)?.split(separator: ",").contains {
                $0 == registrationID
            } ?? false
        return (code, bad)
    }
}

/// Xiaomi's answers, read from the body's `code` (recorded as the reason; HTTP is 200 for most
/// errors too), after the official server SDK's error list. `20301` (every target unknown) is
/// what the service answers for a dead registration id; a `bad_regids` list naming ours is read
/// as the same (``XiaomiMessage/result(in:registrationID:)``).
public enum XiaomiResponsePolicy {
    public static let success = "0"
    /// The reason recorded when a successful answer lists the registration id as bad.
    public static let badRegistration = "20301"
    /// Busy, paused, timed out, rate limited or over the day's quota are retried; the app
    /// secret, package name, a parameter or the app itself being wrong (22000–22022,
    /// 10016–10018, 10026) fails the job.
    public static let table = ResultCodeTable(
        success: success, invalidRegistration: [badRegistration],
        later: ["10001", "10002", "10003", "10009", "10010", "10011", "10022", "10023", "10024", "10027", "10028"],
        quota: ["200001"])

    public static func action(status: Int, reason: String?) -> PushAction {
        table.action(status: status, reason: reason)
    }
}
