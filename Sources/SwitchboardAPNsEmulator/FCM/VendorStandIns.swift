import Foundation
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardPushCore

/// The Xiaomi, OPPO and vivo stand-ins, beside APNs, FCM and Huawei on the emulator's port,
/// each with its real paths, auth checks and result codes (in the body, as the services answer),
/// scripted codes per registration id, and accepted messages in `GET /<channel>/inbox/<id>`.
///
/// - Xiaomi (`--xiaomi-app PACKAGE:SECRET`): `POST /v3/message/regid`, form fields, header
///   `Authorization: key=<secret>`; `code` 0 is success, 20301 an unknown registration id; the
///   scripted code `bad_regids` answers 0 with the id in `data.bad_regids`.
/// - OPPO (`--oppo-app KEY:MASTER_SECRET`): `POST /server/v1/auth` (form `app_key`,
///   `timestamp`, `sign` = SHA-256 hex of key + timestamp + master secret, within 10 minutes)
///   gives a 24-hour `auth_token`; `POST /server/v1/message/notification/unicast` (form
///   `auth_token`, `message`); `code` 0 is success, 11 a bad auth token, 10000 an unknown id.
/// - vivo (`--vivo-app ID:KEY:SECRET`): `POST /message/auth` (JSON `appId`, `appKey`,
///   `timestamp`, `sign` = MD5 hex of id + key + timestamp + secret) gives a 24-hour
///   `authToken`; `POST /message/send` (header `authToken`, JSON); `result` 0 is success,
///   10000 a bad auth token, 10302 an unknown id; the scripted code `invalidUser` answers 0
///   with `invalidUser.status` 1 (the device is gone).
public struct XiaomiEmulatorApp: Sendable {
    public var packageName: String
    public var appSecret: String
    public init(packageName: String, appSecret: String) {
        self.packageName = packageName
        self.appSecret = appSecret
    }
}

public struct OPPOEmulatorApp: Sendable {
    public var appKey: String
    public var masterSecret: String
    public init(appKey: String, masterSecret: String) {
        self.appKey = appKey
        self.masterSecret = masterSecret
    }
}

public struct VivoEmulatorApp: Sendable {
    public var appID: String
    public var appKey: String
    public var appSecret: String
    public init(appID: String, appKey: String, appSecret: String) {
        self.appID = appID
        self.appKey = appKey
        self.appSecret = appSecret
    }
}

/// One vendor stand-in's auth tokens (token → expiry, ms), scripted codes and counters.
struct VendorEmulatorState: Sendable {
    var accessTokens: [String: Int64] = [:]
    /// Scripted result codes per registration id, answered in order.
    var faults: [String: [String]] = [:]
    var tokensIssued = 0
    var next = 0

    /// The next scripted code for `token`, if any.
    mutating func takeFault(token: String) -> String? {
        guard var queue = faults[token], !queue.isEmpty else { return nil }
        let code = queue.removeFirst()
        faults[token] = queue.isEmpty ? nil : queue
        return code
    }

    /// A new auth token living `seconds` from `now`.
    mutating func issue(prefix: String, now: Int64, seconds: Int64) -> String {
        let token = prefix + SecureRandom.token(byteCount: 24)
        accessTokens = accessTokens.filter { $0.value > now }
        accessTokens[token] = now + seconds * 1000
        tokensIssued += 1
        return token
    }

    func isValid(_ token: String, now: Int64) -> Bool { (accessTokens[token] ?? 0) > now }

    mutating func messageName(_ channel: String, now: Int64) -> String {
        next += 1
        return "\(channel)-\(now)-\(next)"
    }
}

/// The answer and, for an accepted message, its inbox key, message name and the message as
/// stored (JSON).
typealias VendorAnswer = (EmulatorResponse, (key: String, name: String, message: [UInt8])?)

private func json(_ object: [String: Any]) -> [UInt8] {
    (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])).map(
        Array.init) ?? []
}

/// A push answer whose body carries the code (recorded as its reason unless it is success).
private func pushAnswer(_ status: Int, _ object: [String: Any], code: String, success: Bool) -> EmulatorResponse {
    var response = EmulatorResponse.json(status, json(object))
    response.isPushAnswer = true
    response.reason = success ? nil : code
    return response
}

struct XiaomiRouter {
    let app: XiaomiEmulatorApp?

    func send(_ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64) -> VendorAnswer
    {
        func error(_ status: Int, _ code: Int, _ reason: String) -> VendorAnswer {
            (
                pushAnswer(
                    status, ["result": "error", "code": code, "reason": reason, "description": reason],
                    code: String(code), success: false), nil
            )
        }
        guard request.method == "POST" else { return error(405, 10012, "use POST") }
        guard let app else { return error(404, 22001, "this emulator was started without --xiaomi-app") }
        let authorization = request.headers.first { $0.name == "authorization" }?.value ?? ""
        guard authorization.hasPrefix("key="),
            ConstantTime.equals(Array(authorization.dropFirst(4).utf8), Array(app.appSecret.utf8))
        else {
            return error(401, 22008, "Invalid app secret in Authorization: key=")
        }
        let form = FormEncoding.fields(request.body)
        guard let id = form["registration_id"], !id.isEmpty, !id.contains(",") else {
            return error(200, 10016, "one registration_id is required")
        }
        guard form["restricted_package_name"] == app.packageName else {
            return error(200, 22022, "restricted_package_name is not this app's")
        }
        guard let passThrough = form["pass_through"], ["0", "1"].contains(passThrough) else {
            return error(200, 10017, "pass_through must be 0 or 1")
        }
        guard let payload = form["payload"], payload.utf8.count <= 4096 else {
            return error(200, 10017, "payload is missing or longer than 4 KB")
        }
        if let ttl = form["time_to_live"], Int64(ttl).map({ $0 < 0 }) ?? true {
            return error(200, 10017, "time_to_live must be milliseconds")
        }
        if passThrough == "0" {
            guard let title = form["title"], !title.isEmpty, title.unicodeScalars.count < 50,
                let description = form["description"],
                !description.isEmpty,
                description.unicodeScalars.count < 128
            else { return error(200, 10016, "a notification needs a title (< 50) and a description (< 128)") }
            if let notifyID = form["notify_id"], Int64(notifyID).map({ !(0...2_147_483_647).contains($0) }) ?? true {
                return error(200, 22103, "notify_id must be 0…2147483647")
            }
        }
        if let code = state.takeFault(token: id) {
            if code == "bad_regids" {
                // Accepted, but the id is named as bad (a dead id in a batch).
                let body: [String: Any] = [
                    "result": "ok", "code": 0, "description": "成功", "data": ["id": "0", "bad_regids": id],
                ]
                return (pushAnswer(200, body, code: "bad_regids", success: false), nil)
            }
            return error(200, Int(code) ?? 10001, "scripted \(code)")
        }
        let name = state.messageName("xiaomi", now: now)
        let answer = pushAnswer(
            200, ["result": "ok", "code": 0, "description": "成功", "data": ["id": name], "trace_id": name], code: "0",
            success: true)
        return (answer, ("xiaomi:" + id, name, json(form)))
    }
}

/// Whether a request's timestamp (ms) is within 10 minutes of `now`, without overflowing on
/// any number a client sends.
private func withinTenMinutes(_ timestamp: Int64, now: Int64) -> Bool {
    timestamp >= now - 600_000 && timestamp <= now + 600_000
}

struct OPPORouter {
    let app: OPPOEmulatorApp?
    static func isRecent(_ timestamp: Int64, now: Int64) -> Bool { withinTenMinutes(timestamp, now: now) }
    static let authTokenSeconds: Int64 = 24 * 3600

    private static func answer(
        _ code: Int, _ message: String, data: [String: Any]? = nil, push: Bool
    ) -> EmulatorResponse {
        var object: [String: Any] = ["code": code, "message": message]
        if let data { object["data"] = data }
        if push { return pushAnswer(200, object, code: String(code), success: code == 0) }
        return .json(200, json(object))
    }

    func auth(
        _ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64
    ) -> EmulatorResponse {
        guard request.method == "POST" else { return Self.answer(12, "Http Action Not Allowed", push: false) }
        guard let app else {
            return Self.answer(14, "Invalid AppKey: this emulator was started without --oppo-app", push: false)
        }
        let form = FormEncoding.fields(request.body)
        guard form["app_key"] == app.appKey else { return Self.answer(14, "Invalid AppKey", push: false) }
        guard let text = form["timestamp"], let timestamp = Int64(text), Self.isRecent(timestamp, now: now) else {
            return Self.answer(19, "Invalid Timestamp: milliseconds within 10 minutes", push: false)
        }
        let expected = SHA256.hex(
            Array(
                OPPOMessage.signInput(
                    appKey: app.appKey, timestampMilliseconds: timestamp, masterSecret: app.masterSecret
                ).utf8))
        guard ConstantTime.equals(Array((form["sign"] ?? "").utf8), Array(expected.utf8)) else {
            return Self.answer(16, "Invalid Signature", push: false)
        }
        let token = state.issue(prefix: "oppo-emu-", now: now, seconds: Self.authTokenSeconds)
        return Self.answer(0, "success", data: ["auth_token": token, "create_time": now], push: false)
    }

    func unicast(
        _ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64
    ) -> VendorAnswer {
        guard request.method == "POST" else { return (Self.answer(12, "Http Action Not Allowed", push: true), nil) }
        guard app != nil else {
            return (Self.answer(14, "Invalid AppKey: this emulator was started without --oppo-app", push: true), nil)
        }
        let form = FormEncoding.fields(request.body)
        guard let token = form["auth_token"], !token.isEmpty else {
            return (Self.answer(29, "Missing Auth Token", push: true), nil)
        }
        guard state.isValid(token, now: now) else { return (Self.answer(11, "Invalid AuthToken", push: true), nil) }
        guard let text = form["message"],
            let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            (message["target_type"] as? NSNumber)?.intValue == 2, let id = message["target_value"] as? String,
            !id.isEmpty,
            let notification = message["notification"] as? [String: Any]
        else {
            return (
                Self.answer(
                    41, "Invalid Arguments: message needs target_type 2, target_value and notification", push: true),
                nil
            )
        }
        guard let title = notification["title"] as? String, !title.isEmpty, title.unicodeScalars.count <= 50,
            let content = notification["content"] as? String, !content.isEmpty, content.unicodeScalars.count <= 200
        else {
            return (
                Self.answer(41, "Invalid Arguments: title (≤ 50) and content (≤ 200) are required", push: true), nil
            )
        }
        guard let channel = notification["channel_id"] as? String, !channel.isEmpty else {
            return (
                Self.answer(
                    41, "Invalid Arguments: channel_id is required (register the channel with OPPO)", push: true), nil
            )
        }
        if let ttl = notification["off_line_ttl"] {
            guard let seconds = (ttl as? NSNumber)?.intValue, (1...864_000).contains(seconds) else {
                return (Self.answer(41, "Invalid Arguments: off_line_ttl is 1…864000 seconds", push: true), nil)
            }
        }
        if notification["notify_level"] != nil, notification["category"] == nil {
            return (Self.answer(67, "notify_level requires category", push: true), nil)
        }
        if let code = state.takeFault(token: id) {
            return (Self.answer(Int(code) ?? -1, "scripted \(code)", push: true), nil)
        }
        let name = state.messageName("oppo", now: now)
        return (
            Self.answer(0, "Success", data: ["messageId": name], push: true), ("oppo:" + id, name, Array(text.utf8))
        )
    }
}

struct VivoRouter {
    /// vivo's measure of a title or content: a Chinese (any non-ASCII) character is two English ones.
    static func width(_ text: String) -> Int { text.unicodeScalars.reduce(0) { $0 + ($1.isASCII ? 1 : 2) } }
    let app: VivoEmulatorApp?
    static func isRecent(_ timestamp: Int64, now: Int64) -> Bool { withinTenMinutes(timestamp, now: now) }
    static let authTokenSeconds: Int64 = 24 * 3600

    private static func answer(
        _ code: Int, _ description: String, extra: [String: Any] = [:], push: Bool
    ) -> EmulatorResponse {
        var object: [String: Any] = ["result": code, "desc": description]
        object.merge(extra) { $1 }
        if push {
            return pushAnswer(200, object, code: String(code), success: code == 0 && extra["invalidUser"] == nil)
        }
        return .json(200, json(object))
    }

    func auth(
        _ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64
    ) -> EmulatorResponse {
        guard request.method == "POST" else { return .error(405, "use POST") }
        guard let app else {
            return Self.answer(10205, "appId 不存在: this emulator was started without --vivo-app", push: false)
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
            return Self.answer(10200, "the body must be JSON", push: false)
        }
        guard object["appId"] as? String == app.appID || (object["appId"] as? NSNumber)?.stringValue == app.appID else {
            return Self.answer(10205, "appId 不存在", push: false)
        }
        guard object["appKey"] as? String == app.appKey else { return Self.answer(10204, "appKey 不合法", push: false) }
        guard let timestamp = (object["timestamp"] as? NSNumber)?.int64Value, Self.isRecent(timestamp, now: now) else {
            return Self.answer(10203, "timestamp 不合法: milliseconds within 10 minutes", push: false)
        }
        let expected = MD5.hex(
            Array(
                VivoMessage.signInput(
                    appID: app.appID, appKey: app.appKey, timestampMilliseconds: timestamp, appSecret: app.appSecret
                ).utf8))
        guard ConstantTime.equals(Array(((object["sign"] as? String) ?? "").lowercased().utf8), Array(expected.utf8))
        else {
            return Self.answer(10206, "sign 不合法", push: false)
        }
        let token = state.issue(prefix: "vivo-emu-", now: now, seconds: Self.authTokenSeconds)
        return Self.answer(0, "请求成功", extra: ["authToken": token], push: false)
    }

    func send(_ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64) -> VendorAnswer
    {
        guard request.method == "POST" else { return (Self.answer(10001, "use POST", push: true), nil) }
        guard let app else {
            return (Self.answer(10205, "appId 不存在: this emulator was started without --vivo-app", push: true), nil)
        }
        let token = request.headers.first { $0.name == "authtoken" }?.value ?? ""
        guard state.isValid(token, now: now) else { return (Self.answer(10000, "authToken 不合法或已过期", push: true), nil) }
        guard let body = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
            return (Self.answer(10001, "the body must be JSON", push: true), nil)
        }
        if let appID = body["appId"] as? String, appID != app.appID {
            return (Self.answer(10094, "appId 与 authToken 不匹配", push: true), nil)
        }
        guard let id = body["regId"] as? String, !id.isEmpty else {
            return (Self.answer(10050, "alias 和 regId 不能都为空", push: true), nil)
        }
        guard let title = body["title"] as? String, !title.isEmpty, Self.width(title) <= 40 else {
            return (Self.answer(10056, "title 不能为空且不超过 20 个汉字 (40 个英文字符)", push: true), nil)
        }
        guard let content = body["content"] as? String, !content.isEmpty, Self.width(content) <= 100 else {
            return (Self.answer(10058, "content 不能为空且不超过 50 个汉字 (100 个英文字符)", push: true), nil)
        }
        guard let notifyType = (body["notifyType"] as? NSNumber)?.intValue, (1...4).contains(notifyType),
            let skipType = (body["skipType"] as? NSNumber)?.intValue, (1...4).contains(skipType)
        else { return (Self.answer(10001, "notifyType and skipType are 1…4", push: true), nil) }
        if let ttl = body["timeToLive"] {
            guard let seconds = (ttl as? NSNumber)?.intValue, VivoMessage.ttlRange.contains(seconds) else {
                return (Self.answer(10001, "timeToLive is 60…604800 seconds", push: true), nil)
            }
        }
        guard let requestID = body["requestId"] as? String, (1...64).contains(requestID.utf8.count) else {
            return (Self.answer(10001, "requestId (≤ 64) is required", push: true), nil)
        }
        if let category = body["category"] as? String, category != category.uppercased() {
            return (Self.answer(10096, "category 不合法", push: true), nil)
        }
        if let custom = body["clientCustomMap"] {
            guard let map = custom as? [String: Any], map.count <= 10, map.values.allSatisfy({ $0 is String }) else {
                return (Self.answer(10001, "clientCustomMap holds up to 10 string values", push: true), nil)
            }
        }
        if let code = state.takeFault(token: id) {
            if code == "invalidUser" {
                return (
                    Self.answer(
                        0, "请求成功", extra: ["taskId": "0", "invalidUser": ["userid": id, "status": 1]], push: true), nil
                )
            }
            return (Self.answer(Int(code) ?? 10001, "scripted \(code)", push: true), nil)
        }
        let name = state.messageName("vivo", now: now)
        return (Self.answer(0, "请求成功", extra: ["taskId": name], push: true), ("vivo:" + id, name, request.body))
    }
}
