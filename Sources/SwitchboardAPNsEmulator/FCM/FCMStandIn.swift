import Foundation
import SwitchboardCrypto
import SwitchboardPushCore

/// The FCM HTTP v1 stand-in the emulator serves beside APNs: its OAuth2 token endpoint
/// (`POST /token`, checking the RS256 assertion of the one service account it knows) and
/// `POST /v1/projects/{project}/messages:send` (checking the access token and the message as FCM
/// does), with scripted errors per token. Accepted messages go to the token's inbox
/// (`GET /fcm/inbox/{token}`).
public struct FCMEmulatorAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var publicKey: RS256PublicKey

    public init(projectID: String, clientEmail: String, publicKey: RS256PublicKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.publicKey = publicKey
    }

    /// The account of a service-account JSON file (its private key's public half).
    public init(serviceAccountJSON json: [UInt8]) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any],
            let project = object["project_id"] as? String, let email = object["client_email"] as? String,
            let key = object["private_key"] as? String
        else { throw EmulatorStartError("the FCM service-account file needs project_id, client_email and private_key") }
        self.init(projectID: project, clientEmail: email, publicKey: try RS256PrivateKey(pem: key).publicKey)
    }
}

/// A scripted FCM error for one token, answered `count` times.
struct FCMFault: Sendable, Equatable {
    var token: String
    var code: String
    var count: Int
    var retryAfter: Int?

    /// The HTTP status and canonical status FCM answers `code` with.
    static let statuses: [String: (Int, String)] = [
        "UNREGISTERED": (404, "NOT_FOUND"), "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT"),
        "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED"),
        "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED"), "UNAVAILABLE": (503, "UNAVAILABLE"),
        "INTERNAL": (500, "INTERNAL"),
        "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED"), "UNAUTHENTICATED": (401, "UNAUTHENTICATED"),
    ]

    /// `{"faults":[{"token":…,"error":"UNREGISTERED","count":1,"retryAfter":2}]}` or one such object.
    static func parse(_ body: [UInt8]) throws(EmulatorStartError) -> [FCMFault] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw EmulatorStartError("an FCM fault script is a JSON object")
        }
        let entries = (object["faults"] as? [[String: Any]]) ?? [object]
        var faults: [FCMFault] = []
        for entry in entries {
            guard let token = entry["token"] as? String, !token.isEmpty else {
                throw EmulatorStartError("an FCM fault needs a 'token'")
            }
            guard let code = entry["error"] as? String, statuses[code] != nil else {
                throw EmulatorStartError(
                    "an FCM fault's 'error' is one of \(statuses.keys.sorted().joined(separator: ", "))")
            }
            let count = (entry["count"] as? Int) ?? 1
            guard count >= 1 else { throw EmulatorStartError("an FCM fault's 'count' is at least 1") }
            faults.append(FCMFault(token: token, code: code, count: count, retryAfter: entry["retryAfter"] as? Int))
        }
        return faults
    }
}

/// What the stand-in remembers: the access tokens it issued and the faults to answer.
struct FCMEmulatorState: Sendable {
    var accessTokens: [String: Int64] = [:]
    var faults: [FCMFault] = []
    var tokensIssued = 0
    var messagesAccepted = 0
    var nextMessage = 0

    /// Takes the next answer fault for `token`, if one is scripted.
    mutating func takeFault(token: String) -> FCMFault? {
        guard let index = faults.firstIndex(where: { $0.token == token }) else { return nil }
        let fault = faults[index]
        if fault.count <= 1 { faults.remove(at: index) } else { faults[index].count -= 1 }
        return fault
    }
}

/// The FCM requests, decided on the emulator's loop thread.
struct FCMRouter {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    let account: FCMEmulatorAccount?
    /// How long an access token lives (Google's: an hour).
    var accessTokenSeconds: Int64 = 3600

    /// `POST /token`: an access token for a valid assertion of the account.
    func token(
        _ request: EmulatorRequest, state: inout FCMEmulatorState, nowMilliseconds now: Int64
    ) -> EmulatorResponse {
        guard request.method == "POST" else { return Self.oauthError(405, "invalid_request", "use POST") }
        guard let account else {
            return Self.oauthError(400, "invalid_client", "this emulator was started without --fcm-service-account")
        }
        let form = Self.form(request.body)
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.oauthError(
                400, "unsupported_grant_type", "grant_type must be urn:ietf:params:oauth:grant-type:jwt-bearer")
        }
        guard let assertion = form["assertion"],
            let (_, claimBytes) = JWT.verifyRS256(assertion, key: account.publicKey)
        else {
            return Self.oauthError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard let claims = (try? JSONSerialization.jsonObject(with: Data(claimBytes))) as? [String: Any] else {
            return Self.oauthError(400, "invalid_grant", "the assertion's claims are not a JSON object")
        }
        let seconds = now / 1000
        guard claims["iss"] as? String == account.clientEmail else {
            return Self.oauthError(400, "invalid_grant", "Invalid issuer.")
        }
        guard let scope = claims["scope"] as? String, scope.split(separator: " ").contains(Substring(Self.scope)) else {
            return Self.oauthError(400, "invalid_scope", "the assertion must ask for \(Self.scope)")
        }
        guard let audience = claims["aud"] as? String, audience.hasSuffix("/token") else {
            return Self.oauthError(400, "invalid_grant", "Invalid audience.")
        }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
            iat <= seconds + 60, exp > seconds, exp - iat <= 3600
        else {
            return Self.oauthError(
                400, "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let token = "ya29.emu-" + SecureRandom.token(byteCount: 24)
        state.accessTokens = state.accessTokens.filter { $0.value > now }
        state.accessTokens[token] = now + accessTokenSeconds * 1000
        state.tokensIssued += 1
        let body = try? JSONSerialization.data(
            withJSONObject: ["access_token": token, "expires_in": accessTokenSeconds - 1, "token_type": "Bearer"],
            options: [.sortedKeys])
        return .json(200, body.map(Array.init) ?? [])
    }

    /// What `POST /v1/projects/{project}/messages:send` gets: an answer, and the message to
    /// deliver (its inbox key, name and body) when accepted.
    func send(
        _ request: EmulatorRequest, state: inout FCMEmulatorState, nowMilliseconds now: Int64
    ) -> (EmulatorResponse, (key: String, name: String)?) {
        let path = request.pathWithoutQuery
        guard request.method == "POST" else { return (Self.error(405, "INVALID_ARGUMENT", nil, "use POST"), nil) }
        guard let account else {
            return (Self.error(404, "NOT_FOUND", nil, "this emulator was started without --fcm-service-account"), nil)
        }
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else {
            return (Self.error(404, "NOT_FOUND", nil, "no such method: \(path)"), nil)
        }
        let project = path.dropFirst(prefix.count).dropLast(suffix.count)
        let authorization = request.headers.first { $0.name == "authorization" }?.value ?? ""
        guard authorization.hasPrefix("Bearer "), let expiry = state.accessTokens[String(authorization.dropFirst(7))],
            expiry > now
        else {
            return (
                Self.error(
                    401, "UNAUTHENTICATED", nil,
                    "Request had invalid authentication credentials. Expected OAuth 2 access token."), nil
            )
        }
        guard project == account.projectID else {
            return (
                Self.error(
                    403, "PERMISSION_DENIED", nil,
                    "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)'"
                ), nil
            )
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
            let message = object["message"] as? [String: Any]
        else { return (Self.invalid("the body must be a JSON object with a 'message' object"), nil) }
        guard let token = message["token"] as? String, !token.isEmpty, message["topic"] == nil,
            message["condition"] == nil
        else {
            return (
                Self.invalid(
                    "the message must name exactly one target, a 'token' (topics and conditions are not emulated)"), nil
            )
        }
        guard token.utf8.count <= 4096, token.utf8.allSatisfy({ (33...126).contains($0) }) else {
            return (
                Self.error(
                    400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                    "The registration token is not a valid FCM registration token"), nil
            )
        }
        if let data = message["data"] {
            guard let data = data as? [String: Any], data.values.allSatisfy({ $0 is String }) else {
                return (Self.invalid("Invalid value at 'message.data': every value must be a string"), nil)
            }
            let size = data.reduce(0) { $0 + $1.key.utf8.count + (($1.value as? String)?.utf8.count ?? 0) }
            guard size <= 4096 else {
                return (Self.invalid("Message is too big: data of \(size) bytes, at most 4096"), nil)
            }
        }
        if let android = message["android"] {
            guard let android = android as? [String: Any] else {
                return (Self.invalid("Invalid value at 'message.android'"), nil)
            }
            if let priority = android["priority"] {
                guard let text = priority as? String, ["HIGH", "NORMAL"].contains(text.uppercased()) else {
                    return (Self.invalid("Invalid value at 'message.android.priority': HIGH or NORMAL"), nil)
                }
            }
            if let ttl = android["ttl"] {
                guard let text = ttl as? String,
                    text.range(of: #"^[0-9]{1,10}(\.[0-9]{1,9})?s$"#, options: .regularExpression) != nil
                else {
                    return (Self.invalid("Invalid value at 'message.android.ttl': a duration such as \"30s\""), nil)
                }
            }
            if let collapse = android["collapse_key"], !(collapse is String) {
                return (Self.invalid("Invalid value at 'message.android.collapse_key'"), nil)
            }
        }
        if let fault = state.takeFault(token: token) {
            let (status, canonical) = FCMFault.statuses[fault.code]!
            var response = Self.error(
                status, canonical, fault.code == "UNAUTHENTICATED" ? nil : fault.code,
                fault.code == "INVALID_ARGUMENT"
                    ? "The registration token is not a valid FCM registration token" : "scripted \(fault.code)")
            if let retryAfter = fault.retryAfter {
                response.headers.append(APNsHeader("retry-after", String(retryAfter)))
            }
            return (response, nil)
        }
        state.nextMessage += 1
        state.messagesAccepted += 1
        let name = "projects/\(account.projectID)/messages/\(now)-\(state.nextMessage)"
        let body = try? JSONSerialization.data(withJSONObject: ["name": name], options: [.withoutEscapingSlashes])
        var response = EmulatorResponse.json(200, body.map(Array.init) ?? [])
        response.isPushAnswer = true
        return (response, ("fcm:" + token, name))
    }

    /// An FCM error body: `{"error":{"code","message","status","details":[{"@type","errorCode"}]}}`.
    static func error(_ status: Int, _ canonical: String, _ errorCode: String?, _ message: String) -> EmulatorResponse {
        var error: [String: Any] = ["code": status, "message": message, "status": canonical]
        if let errorCode {
            error["details"] = [
                ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]
            ]
        }
        let body = try? JSONSerialization.data(
            withJSONObject: ["error": error], options: [.sortedKeys, .withoutEscapingSlashes])
        var response = EmulatorResponse.json(status, body.map(Array.init) ?? [])
        response.isPushAnswer = true
        response.reason = errorCode ?? canonical
        return response
    }

    static func invalid(_ message: String) -> EmulatorResponse {
        error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message)
    }

    static func oauthError(_ status: Int, _ code: String, _ description: String) -> EmulatorResponse {
        let body = try? JSONSerialization.data(
            withJSONObject: ["error": code, "error_description": description], options: [.sortedKeys])
        return .json(status, body.map(Array.init) ?? [])
    }

    /// `application/x-www-form-urlencoded` fields.
    static func form(_ body: [UInt8]) -> [String: String] { FormEncoding.fields(body) }
}

/// A problem with the FCM stand-in's settings or a fault script.
public struct EmulatorStartError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
