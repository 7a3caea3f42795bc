import Foundation

/// Huawei Push Kit (HMS, `v1/{appId}/messages:send`) for rings on Huawei phones without Google
/// services: a high-urgency data message (the data is one JSON string) with a time to live no
/// longer than the ring window. Facts: reference/push-delivery-facts.md §5.
public enum HuaweiMessage {
    /// The body for one token: `data` is a stored ``FCMMessage`` data object (the same fields).
    public static func body(token: String, data: [UInt8], ttlSeconds: Int) -> [UInt8] {
        let object: [String: Any] = [
            "validate_only": false,
            "message": [
                "data": String(decoding: data.isEmpty ? Array("{}".utf8) : data, as: UTF8.self),
                "android": ["urgency": "HIGH", "ttl": "\(max(0, ttlSeconds))s"],
                "token": [token],
            ],
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map(Array.init) ?? []
    }

    /// The result code in an answer body (`{"code":"80000000","msg":…}`), if there is one.
    public static func code(in body: [UInt8]) -> String? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return nil }
        if let code = object["code"] as? String { return code }
        return (object["code"] as? NSNumber)?.stringValue
    }
}

/// Huawei's answers: success is `80000000` in the body (with HTTP 200); `80300007` is an
/// invalid token; `80200001` and `80200003` are OAuth failures (a new access token is fetched).
public enum HuaweiResponsePolicy {
    public static let success = "80000000"

    public static func action(status: Int, reason: String?) -> PushAction {
        switch reason {
        case success?: return .delivered
        case "80300007"?: return .deleteToken
        case "80200001"?, "80200003"?: return .refreshProviderTokenAndRetry
        default: break
        }
        switch status {
        case 401, 403: return .refreshProviderTokenAndRetry
        case 429, 500...599: return .retry
        default: return .fail
        }
    }
}
