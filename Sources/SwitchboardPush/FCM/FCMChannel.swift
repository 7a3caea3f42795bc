import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPushCore

/// A Google service account's key file, as the Firebase console downloads it.
public struct FCMServiceAccount: Sendable {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyID: String
    public let privateKey: RS256PrivateKey
    /// Where access tokens come from (`https://oauth2.googleapis.com/token`, or an emulator).
    public let tokenURI: String

    /// Reads the JSON file's text; throws a message naming what is missing or wrong.
    public init(json: [UInt8]) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any] else {
            throw FCMConfigurationError("the service-account file is not a JSON object")
        }
        func field(_ name: String) throws -> String {
            guard let value = object[name] as? String, !value.isEmpty else {
                throw FCMConfigurationError("the service-account file has no '\(name)'")
            }
            return value
        }
        if let type = object["type"] as? String, type != "service_account" {
            throw FCMConfigurationError("the service-account file's type is '\(type)', not 'service_account'")
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        privateKeyID = (object["private_key_id"] as? String) ?? ""
        tokenURI = (object["token_uri"] as? String) ?? "https://oauth2.googleapis.com/token"
        guard tokenURI.hasPrefix("https://") || tokenURI.hasPrefix("http://") else {
            throw FCMConfigurationError("the service-account file's token_uri must be an http(s):// URL")
        }
        // The signed assertion is a credential: in clear text only to this machine (an emulator).
        if tokenURI.hasPrefix("http://") {
            let host = URLComponents(string: tokenURI)?.host ?? ""
            guard ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else {
                throw FCMConfigurationError(
                    "the service-account file's token_uri may be http:// only on this machine (127.0.0.1, localhost); use https://"
                )
            }
        }
        do {
            privateKey = try RS256PrivateKey(pem: try field("private_key"))
        } catch let error as FCMConfigurationError {
            throw error
        } catch {
            throw FCMConfigurationError("the service-account file's private_key is not a usable RSA key: \(error)")
        }
    }
}

/// A problem with the FCM settings, said at start-up.
public struct FCMConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// An Android channel that rings with a data message (FCM's, Huawei's): the ring's data object
/// (``FCMMessage/ringData``) and the notice's (``FCMMessage/endedData``) are built alike, and
/// the channel differs in its transport and its reason table. A channel without a transport
/// (not configured) fails every job at once with ``PushChannelSummary/notConfiguredReason``.
public protocol DataMessageChannel: PushChannel {
    var transport: (any PushTransport)? { get }
    /// The service's reason table.
    func action(status: Int, reason: String?) -> PushAction
}

extension DataMessageChannel {
    public func ringRequest(for ring: PushRing) throws -> PushRequest {
        // The data object is stored; the message around it (token, time to live) is made at each
        // attempt, so a retry never outlives the ring window.
        PushRequest(
            payload: try FCMMessage.ringData(
                callID: ring.callID, scopeKind: ring.scopeKind, scopeID: ring.scopeID, mode: ring.mode,
                callerName: ring.callerName,
                groupName: ring.groupName, expiresAt: ring.expiresAt, now: ring.now, appData: ring.appData,
                locale: ring.locale), headers: []
        )
    }

    /// A high-priority `call_ended` data message (under the ring's collapse key where the
    /// service has one), so the app takes its full-screen ringing notification down.
    public func noticeRequest(for notice: PushNotice) throws -> PushRequest? { try endedDataRequest(for: notice) }

    /// The data object of `notice` (`call_ended`, or `call_incoming` for a call not rung).
    public func endedDataRequest(for notice: PushNotice) throws -> PushRequest {
        PushRequest(payload: try FCMMessage.noticeData(notice), headers: [])
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        guard let transport else { return .response(status: 0, reason: PushChannelSummary.notConfiguredReason) }
        return await transport.send(job)
    }

    public func verdict(for result: PushSendResult) -> PushVerdict {
        PushVerdict(result) { action(status: $0, reason: $1) }
    }

    public func shutdown() async { await transport?.shutdown() }
}

/// The `fcm` channel: rings as FCM HTTP v1 data messages, read with ``FCMResponsePolicy``,
/// sent by an ``FCMTransport``.
public struct FCMChannel: DataMessageChannel {
    public static let channelName = "fcm"

    public let summary: PushChannelSummary
    public let transport: (any PushTransport)?

    public var name: String { Self.channelName }
    public var provider: String { "fcm" }

    public init(transport: any PushTransport, auth: String = "", endpoints: String = "", caFile: String = "") {
        self.transport = transport
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "fcm", configured: true, auth: auth, endpoints: endpoints,
            caFile: caFile, hint: "")
    }

    public init(unconfigured: Void = ()) {
        transport = nil
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "fcm", configured: false, auth: "", endpoints: "", caFile: "",
            hint: "set fcmServiceAccountFile to the Firebase service-account JSON", optional: true)
    }

    public func action(status: Int, reason: String?) -> PushAction {
        FCMResponsePolicy.action(status: status, reason: reason)
    }

    /// The table's verdict. A `QUOTA_EXCEEDED` (429) waits as long as its `Retry-After` says: a
    /// device's message rate or an overload asks for seconds. Without one it is the project's
    /// per-minute quota, which refills within the minute: it waits FCM's minimum of a minute
    /// (``FCMResponsePolicy/quotaRetryFloor``). Either way the dispatcher drops a ring whose
    /// next attempt would come after its ring window (expired, counted), never sends it late.
    public func verdict(for result: PushSendResult) -> PushVerdict {
        var verdict = PushVerdict(result) { action(status: $0, reason: $1) }
        if verdict.reason == "QUOTA_EXCEEDED" {
            verdict.retryAfter = verdict.retryAfter ?? FCMResponsePolicy.quotaRetryFloor
        }
        return verdict
    }
}

/// FCM HTTP v1 over HTTP/2: an OAuth2 access token from the service account (an RS256-signed
/// assertion exchanged at `token_uri`), cached and replaced five minutes before it expires or
/// once after FCM rejects it, shared by every request; then one `messages:send` per job.
public final class FCMTransport: PushTransport {
    public let account: FCMServiceAccount
    private let clients: TokenServiceClients
    private let now: @Sendable () -> Date
    private let tokens: AccessTokenCache

    /// Access tokens fetched so far (tests: one fetch for many rejected requests).
    public var tokenFetches: Int { tokens.fetchCount }

    /// `baseURL`: FCM (`https://fcm.googleapis.com`, or an emulator's `http://`/`https://` URL).
    public init(
        account: FCMServiceAccount, baseURL: String, caFile: String?, connections: Int, requestTimeout: Duration,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.account = account
        self.now = now
        let clients = try TokenServiceClients(
            baseURL: baseURL, tokenURL: account.tokenURI, caFile: caFile, connections: connections,
            requestTimeout: requestTimeout)
        self.clients = clients
        tokens = AccessTokenCache(now: now) { issued in
            try await Self.fetchToken(
                account: account, client: clients.token, path: clients.tokenPath, issuedAt: issued)
        }
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        await tokens.sending("FCM access token") { token, issuedAt in
            let ttl = Int(job.expiresAt.timeIntervalSince(now()).rounded(.down))
            let body = FCMMessage.body(
                token: job.token, data: job.payload, collapseKey: "call_\(job.callID)", ttlSeconds: ttl)
            let response: HTTP2Response
            do {
                response = try await clients.api.send(
                    HTTP2Request(
                        method: "POST", path: "/v1/projects/\(account.projectID)/messages:send",
                        headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")],
                        body: body))
            } catch {
                return .transportFailure(String(describing: error))
            }
            guard response.status != 200 else { return .response(status: 200, reason: nil) }
            let reason = FCMError(body: response.body).reason
            if reason == "UNAUTHENTICATED" || (reason == nil && response.status == 401) {
                tokens.rejected(issuedAt: issuedAt)
            }
            let retryAfter = response.headerValue("retry-after").flatMap(TimeInterval.init)
            return .response(status: response.status, reason: reason, retryAfter: retryAfter)
        }
    }

    /// A new access token: the service account's RS256 assertion exchanged at `token_uri`.
    private static func fetchToken(
        account: FCMServiceAccount, client: HTTP2Client, path: String, issuedAt issued: Date
    ) async throws
        -> (token: String, lifetime: TimeInterval)
    {
        let iat = Int64(issued.timeIntervalSince1970)
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "RS256", "typ": "JWT", "kid": account.privateKeyID], options: [.sortedKeys])
        let claims = try JSONSerialization.data(
            withJSONObject: [
                "iss": account.clientEmail, "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "aud": account.tokenURI,
                "iat": iat, "exp": iat + 3600,
            ], options: [.sortedKeys, .withoutEscapingSlashes])
        let assertion = try JWT.signRS256(headerJSON: Array(header), claimsJSON: Array(claims), key: account.privateKey)
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = try await client.send(
            HTTP2Request(
                method: "POST", path: path, headers: [("content-type", "application/x-www-form-urlencoded")],
                body: Array(form.utf8)))
        return try OAuthTokenResponse.parse(response)
    }

    public func shutdown() async { await clients.shutdown() }
}
