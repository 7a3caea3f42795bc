import Foundation
import SwitchboardCrypto
import SwitchboardPushCore

/// Xiaomi MiPush: no token to fetch, the app secret in every request's `Authorization: key=`
/// header; one form POST per job to the region's host.
public final class XiaomiTransport: PushTransport {
    private let client: HTTP2Client
    private let authorization: String
    private let packageName: String
    private let channelID: String?
    private let now: @Sendable () -> Date

    /// `baseURL`: the region's host (``XiaomiMessage/regionHosts``) or an emulator.
    public init(
        appSecret: String, packageName: String, channelID: String?, baseURL: String, caFile: String?, connections: Int,
        requestTimeout: Duration, now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        client = try HTTP2Client(
            configuration: .service(
                baseURL: baseURL, connections: connections, requestTimeout: requestTimeout, caFile: caFile,
                acceptsHTTP1: true))
        authorization = "key=\(appSecret)"
        self.packageName = packageName
        self.channelID = channelID
        self.now = now
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        let ttl = Int64((job.expiresAt.timeIntervalSince(now()) * 1000).rounded(.down))
        let body = XiaomiMessage.form(
            registrationID: job.token, packageName: packageName, data: job.payload, ttlMilliseconds: ttl,
            channelID: channelID)
        let response: HTTP2Response
        do {
            response = try await client.send(
                HTTP2Request(
                    method: "POST", path: XiaomiMessage.path,
                    headers: [("authorization", authorization), ("content-type", "application/x-www-form-urlencoded")],
                    body: body))
        } catch {
            return .transportFailure(String(describing: error))
        }
        let result = XiaomiMessage.result(in: response.body, registrationID: job.token)
        let reason = result.map { $0.badRegistration ? XiaomiResponsePolicy.badRegistration : String($0.code) }
        return .response(
            status: response.status, reason: reason,
            retryAfter: response.headerValue("retry-after").flatMap(TimeInterval.init))
    }

    public func shutdown() async { await client.shutdown() }
}

/// OPPO push: an auth token (signed with the master secret) shared by every request and
/// replaced before its 24 hours are up or once OPPO rejects it; then one unicast per job.
public final class OPPOTransport: PushTransport {
    private let client: HTTP2Client
    private let tokens: AccessTokenCache
    private let channelID: String
    private let now: @Sendable () -> Date

    /// Auth tokens fetched so far.
    public var tokenFetches: Int { tokens.fetchCount }

    /// `baseURL`: ``OPPOMessage/chinaURL``, ``OPPOMessage/overseasURL`` or an emulator;
    /// `channelID`: the notification channel the app registered for calls.
    public init(
        appKey: String, masterSecret: String, channelID: String, baseURL: String, caFile: String?, connections: Int,
        requestTimeout: Duration,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let client = try HTTP2Client(
            configuration: .service(
                baseURL: baseURL, connections: connections, requestTimeout: requestTimeout, caFile: caFile,
                acceptsHTTP1: true))
        self.client = client
        self.channelID = channelID
        self.now = now
        tokens = AccessTokenCache(now: now) { issued in
            let timestamp = Int64(issued.timeIntervalSince1970) * 1000
            let sign = SHA256.hex(
                Array(
                    OPPOMessage.signInput(appKey: appKey, timestampMilliseconds: timestamp, masterSecret: masterSecret)
                        .utf8))
            let response = try await client.send(
                HTTP2Request(
                    method: "POST", path: OPPOMessage.authPath,
                    headers: [("content-type", "application/x-www-form-urlencoded")],
                    body: FormEncoding.body([("app_key", appKey), ("sign", sign), ("timestamp", String(timestamp))])))
            let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
            guard response.status == 200, (object?["code"] as? NSNumber)?.intValue == 0,
                let token = (object?["data"] as? [String: Any])?["auth_token"] as? String, !token.isEmpty
            else {
                throw OAuthTokenError(
                    description:
                        "OPPO auth answered \(response.status): \((object?["message"] as? String) ?? "no auth_token")")
            }
            return (token, OPPOMessage.authTokenLifetime)
        }
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        await tokens.send(
            job, on: client, what: "OPPO auth token", now: now, rejected: OPPOResponsePolicy.table.authTokenRejected,
            reason: { OPPOMessage.code(in: $0.body).map(String.init) }
        ) { token, ttl in
            OPPOMessage.unicastForm(
                authToken: token, registrationID: job.token, data: job.payload, ttlSeconds: ttl, channelID: channelID
            ).map {
                HTTP2Request(
                    method: "POST", path: OPPOMessage.unicastPath,
                    headers: [("content-type", "application/x-www-form-urlencoded")], body: $0)
            }
        }
    }

    public func shutdown() async { await client.shutdown() }
}

/// vivo push: an auth token (signed with the app secret) shared by every request and replaced
/// before its 24 hours are up or once vivo rejects it; then one send per job.
public final class VivoTransport: PushTransport {
    private let client: HTTP2Client
    private let tokens: AccessTokenCache
    private let appID: String
    private let now: @Sendable () -> Date

    /// Auth tokens fetched so far.
    public var tokenFetches: Int { tokens.fetchCount }

    /// `baseURL`: ``VivoMessage/defaultURL`` or an emulator.
    public init(
        appID: String, appKey: String, appSecret: String, baseURL: String, caFile: String?, connections: Int,
        requestTimeout: Duration,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let client = try HTTP2Client(
            configuration: .service(
                baseURL: baseURL, connections: connections, requestTimeout: requestTimeout, caFile: caFile,
                acceptsHTTP1: true))
        self.client = client
        self.appID = appID
        self.now = now
        tokens = AccessTokenCache(now: now) { issued in
            let timestamp = Int64(issued.timeIntervalSince1970) * 1000
            let sign = MD5.hex(
                Array(
                    VivoMessage.signInput(
                        appID: appID, appKey: appKey, timestampMilliseconds: timestamp, appSecret: appSecret
                    ).utf8))
            let response = try await client.send(
                HTTP2Request(
                    method: "POST", path: VivoMessage.authPath, headers: [("content-type", "application/json")],
                    body: VivoMessage.authBody(
                        appID: appID, appKey: appKey, timestampMilliseconds: timestamp, sign: sign)))
            return (try VivoMessage.authToken(in: response.body).get(), VivoMessage.authTokenLifetime)
        }
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        await tokens.send(
            job, on: client, what: "vivo auth token", now: now, rejected: VivoResponsePolicy.table.authTokenRejected,
            reason: { response in
                VivoMessage.result(in: response.body).map {
                    $0.code == 0 && $0.deviceGone ? VivoResponsePolicy.deviceGone : String($0.code)
                }
            }
        ) { token, ttl in
            VivoMessage.sendBody(
                appID: appID, registrationID: job.token, data: job.payload, ttlSeconds: ttl, requestID: job.id
            ).map {
                HTTP2Request(
                    method: "POST", path: VivoMessage.sendPath,
                    headers: [("authtoken", token), ("content-type", "application/json")], body: $0)
            }
        }
    }

    public func shutdown() async { await client.shutdown() }
}
