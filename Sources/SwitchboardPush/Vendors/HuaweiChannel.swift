import Foundation
import SwitchboardPushCore

/// The `huawei` channel: Huawei Push Kit for Huawei phones (many in China cannot receive FCM),
/// with FCM's data objects sent as HMS data messages, read with ``HuaweiResponsePolicy``.
public struct HuaweiChannel: DataMessageChannel {
    public static let channelName = "huawei"

    public let summary: PushChannelSummary
    public let transport: (any PushTransport)?

    public var name: String { Self.channelName }
    public var provider: String { "huawei" }

    public init(transport: any PushTransport, auth: String = "", endpoints: String = "", caFile: String = "") {
        self.transport = transport
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "huawei", configured: true, auth: auth, endpoints: endpoints,
            caFile: caFile, hint: "")
    }

    public init(unconfigured: Void = ()) {
        transport = nil
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "huawei", configured: false, auth: "", endpoints: "", caFile: "",
            hint: "set huaweiAppID and huaweiAppSecret (AppGallery Connect)", optional: true)
    }

    public func action(status: Int, reason: String?) -> PushAction {
        HuaweiResponsePolicy.action(status: status, reason: reason)
    }
}

/// Huawei Push Kit over HTTP/2: an access token by client credentials (`client_id` = the app
/// id, `client_secret`), shared and refreshed like FCM's; then one `messages:send` per job.
public final class HuaweiTransport: PushTransport {
    public let appID: String
    private let clients: TokenServiceClients
    private let tokens: AccessTokenCache
    private let now: @Sendable () -> Date

    /// Access tokens fetched so far.
    public var tokenFetches: Int { tokens.fetchCount }

    /// `baseURL`: the push API (`https://push-api.cloud.huawei.com`); `tokenURL`: the OAuth
    /// endpoint (`https://oauth-login.cloud.huawei.com/oauth2/v3/token`); either may be an emulator.
    public init(
        appID: String, appSecret: String, baseURL: String, tokenURL: String, caFile: String?, connections: Int,
        requestTimeout: Duration,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.appID = appID
        self.now = now
        let clients = try TokenServiceClients(
            baseURL: baseURL, tokenURL: tokenURL, caFile: caFile, connections: connections,
            requestTimeout: requestTimeout,
            acceptsHTTP1: true)
        self.clients = clients
        let form = FormEncoding.body([
            ("grant_type", "client_credentials"), ("client_id", appID), ("client_secret", appSecret),
        ])
        tokens = AccessTokenCache(now: now) { _ in
            let response = try await clients.token.send(
                HTTP2Request(
                    method: "POST", path: clients.tokenPath,
                    headers: [("content-type", "application/x-www-form-urlencoded")], body: form))
            return try OAuthTokenResponse.parse(response)
        }
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        await tokens.sending("Huawei access token") { token, issuedAt in
            let ttl = Int(job.expiresAt.timeIntervalSince(now()).rounded(.down))
            let response: HTTP2Response
            do {
                response = try await clients.api.send(
                    HTTP2Request(
                        method: "POST", path: "/v1/\(appID)/messages:send",
                        headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")],
                        body: HuaweiMessage.body(token: job.token, data: job.payload, ttlSeconds: ttl)))
            } catch {
                return .transportFailure(String(describing: error))
            }
            let code = HuaweiMessage.code(in: response.body)
            if code == "80200001" || code == "80200003" || response.status == 401 {
                tokens.rejected(issuedAt: issuedAt)
            }
            let status = response.status == 200 && code == HuaweiResponsePolicy.success ? 200 : response.status
            return .response(
                status: status, reason: code, retryAfter: response.headerValue("retry-after").flatMap(TimeInterval.init)
            )
        }
    }

    public func shutdown() async { await clients.shutdown() }
}
