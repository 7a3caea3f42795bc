import Foundation
import SwitchboardCrypto

/// The Huawei Push Kit stand-in, beside APNs and FCM on the emulator's port: its OAuth2 token
/// endpoint (`POST /oauth2/v3/token`, client credentials of the one app it knows) and
/// `POST /v1/{appId}/messages:send`, answering with Huawei's result codes in the body
/// (`80000000` success, `80300007` invalid token, `80200003` expired access token, `80100003`
/// a malformed message), with scripted codes per token; accepted messages go to
/// `GET /huawei/inbox/{token}`.
public struct HuaweiEmulatorApp: Sendable {
    public var appID: String
    public var appSecret: String

    public init(appID: String, appSecret: String) {
        self.appID = appID
        self.appSecret = appSecret
    }
}

struct HuaweiRouter {
    let app: HuaweiEmulatorApp?
    var accessTokenSeconds: Int64 = 3600

    func token(
        _ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64
    ) -> EmulatorResponse {
        guard request.method == "POST" else { return FCMRouter.oauthError(405, "invalid_request", "use POST") }
        guard let app else {
            return FCMRouter.oauthError(400, "invalid_client", "this emulator was started without --huawei-app")
        }
        let form = FCMRouter.form(request.body)
        guard form["grant_type"] == "client_credentials" else {
            return FCMRouter.oauthError(400, "unsupported_grant_type", "grant_type must be client_credentials")
        }
        guard form["client_id"] == app.appID,
            ConstantTime.equals(Array((form["client_secret"] ?? "").utf8), Array(app.appSecret.utf8))
        else { return FCMRouter.oauthError(400, "invalid_client", "client_id or client_secret is wrong") }
        let token = state.issue(prefix: "hms-emu-", now: now, seconds: accessTokenSeconds)
        let body = try? JSONSerialization.data(
            withJSONObject: ["access_token": token, "expires_in": accessTokenSeconds, "token_type": "Bearer"],
            options: [.sortedKeys])
        return .json(200, body.map(Array.init) ?? [])
    }

    /// The answer, and the inbox key and message name of an accepted message.
    func send(
        _ request: EmulatorRequest, state: inout VendorEmulatorState, nowMilliseconds now: Int64
    ) -> (EmulatorResponse, (key: String, name: String)?) {
        guard request.method == "POST" else { return (Self.result(405, "80100001", "use POST"), nil) }
        guard let app else {
            return (Self.result(404, "80100001", "this emulator was started without --huawei-app"), nil)
        }
        let parts = request.pathWithoutQuery.split(separator: "/")
        guard parts.count == 3, parts[0] == "v1", parts[2] == "messages:send" else {
            return (Self.result(404, "80100001", "no such method"), nil)
        }
        let authorization = request.headers.first { $0.name == "authorization" }?.value ?? ""
        guard authorization.hasPrefix("Bearer "), let expiry = state.accessTokens[String(authorization.dropFirst(7))],
            expiry > now
        else {
            return (Self.result(401, "80200003", "OAuth token expired"), nil)
        }
        guard parts[1] == app.appID else {
            return (Self.result(401, "80200001", "Oauth authentication error: another app's token"), nil)
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
            let message = object["message"] as? [String: Any],
            let tokens = message["token"] as? [String], tokens.count == 1, let token = tokens.first, !token.isEmpty
        else { return (Self.result(400, "80100003", "Illegal payload: one token in message.token"), nil) }
        if let data = message["data"], !(data is String) {
            return (Self.result(400, "80100003", "Illegal payload: message.data must be a string"), nil)
        }
        if let android = message["android"] as? [String: Any] {
            if let urgency = android["urgency"], !(["HIGH", "NORMAL"].contains(urgency as? String ?? "")) {
                return (Self.result(400, "80100003", "Illegal payload: android.urgency is HIGH or NORMAL"), nil)
            }
            if let ttl = android["ttl"],
                (ttl as? String)?.range(of: #"^[0-9]{1,10}(\.[0-9]{1,9})?s$"#, options: .regularExpression) == nil
            {
                return (Self.result(400, "80100003", "Illegal payload: android.ttl like \"30s\""), nil)
            }
        }
        if let code = state.takeFault(token: token) { return (Self.result(200, code, "scripted \(code)"), nil) }
        let name = state.messageName("huawei", now: now)
        return (Self.result(200, "80000000", "Success", requestID: name), ("huawei:" + token, name))
    }

    static func result(_ status: Int, _ code: String, _ message: String, requestID: String? = nil) -> EmulatorResponse {
        var object: [String: String] = ["code": code, "msg": message]
        if let requestID { object["requestId"] = requestID }
        let body = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        var response = EmulatorResponse.json(status, body.map(Array.init) ?? [])
        response.isPushAnswer = true
        response.reason = code == "80000000" ? nil : code
        return response
    }
}
