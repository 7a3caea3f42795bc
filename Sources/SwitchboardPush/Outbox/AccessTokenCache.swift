import Foundation
import Synchronization
import SwitchboardPushCore

/// An OAuth2 access token shared by every request of one channel (FCM's, Huawei's): fetched
/// once for all waiting requests, replaced ``AccessTokenClock/refreshMargin`` before it expires
/// (beside the requests, which keep the current one meanwhile) or at once after the service
/// rejected it. `fetch` gets a new token and its lifetime in seconds.
public final class AccessTokenCache: Sendable {
    private struct State {
        var clock = AccessTokenClock()
        var current: String?
        /// The fetch in progress: every request that needs a token waits for this one.
        var fetching: Task<(String, Date), any Error>?
        /// The last fetch failed: until `until`, requests fail with its reason instead of each
        /// starting a fetch of its own (wrong credentials would otherwise hit the token
        /// endpoint once per job and retry).
        var failure: (reason: String, until: Date)?
    }

    /// How long a failed fetch answers for the fetches it spares.
    public static let failureHold: TimeInterval = 5
    private let state = Mutex(State())
    private let fetches = Atomic<Int>(0)
    private let now: @Sendable () -> Date
    private let fetch: @Sendable (_ issuedAt: Date) async throws -> (token: String, lifetime: TimeInterval)

    /// Tokens fetched so far.
    public var fetchCount: Int { fetches.load(ordering: .relaxed) }

    public init(
        now: @escaping @Sendable () -> Date,
        fetch: @escaping @Sendable (_ issuedAt: Date) async throws -> (token: String, lifetime: TimeInterval)
    ) {
        self.now = now
        self.fetch = fetch
    }

    /// The token to send, and when it was issued (to say which one a rejection is about).
    public func token() async throws -> (String, Date) {
        let moment = now()
        enum Next { case use(String, Date), wait(Task<(String, Date), any Error>), fail(String) }
        let next = state.withLock { state -> Next in
            let usable = state.clock.isUsable(now: moment)
            if let current = state.current, let issued = state.clock.issuedAt, usable,
                !state.clock.needsNewToken(now: moment)
            {
                return .use(current, issued)
            }
            if let failure = state.failure, moment < failure.until, state.fetching == nil {
                if let current = state.current, let issued = state.clock.issuedAt, usable {
                    return .use(current, issued)
                }
                return .fail(failure.reason)
            }
            let fetching = state.fetching ?? Task { try await self.refresh() }
            state.fetching = fetching
            if let current = state.current, let issued = state.clock.issuedAt, usable { return .use(current, issued) }
            return .wait(fetching)
        }
        switch next {
        case .use(let token, let issued): return (token, issued)
        case .wait(let task): return try await task.value
        case .fail(let reason): throw OAuthTokenError(description: reason)
        }
    }

    /// Runs `send` with the token to send and when it was issued; a token that cannot be had is
    /// a transport failure (retried), named by `what`.
    public func sending(
        _ what: String, _ send: (_ token: String, _ issuedAt: Date) async -> PushSendResult
    ) async -> PushSendResult {
        let current: (String, Date)
        do {
            current = try await token()
        } catch {
            return .transportFailure("\(what): \(error)")
        }
        return await send(current.0, current.1)
    }

    /// One send of a service whose every request carries the shared auth token (OPPO, vivo):
    /// `request` builds it from the token and the seconds left of the job's window (nil:
    /// nothing to show, refused at once); `reason` reads the answer's code, and a code in
    /// `rejected` says the token was refused (the next send fetches a new one).
    public func send(
        _ job: PushJob, on client: HTTP2Client, what: String, now: @Sendable () -> Date, rejected: Set<String>,
        reason: (HTTP2Response) -> String?, request: (_ token: String, _ ttlSeconds: Int) -> HTTP2Request?
    ) async -> PushSendResult {
        await sending(what) { token, issuedAt in
            let ttl = Int(job.expiresAt.timeIntervalSince(now()).rounded(.down))
            guard let built = request(token, ttl) else { return .response(status: 400, reason: "NothingToShow") }
            let response: HTTP2Response
            do {
                response = try await client.send(built)
            } catch {
                return .transportFailure(String(describing: error))
            }
            let code = reason(response)
            if let code, rejected.contains(code) { self.rejected(issuedAt: issuedAt) }
            return .response(
                status: response.status, reason: code,
                retryAfter: response.headerValue("retry-after").flatMap(TimeInterval.init))
        }
    }

    /// The service rejected the token issued at `issuedAt`: the next request fetches a new one
    /// (once, however many requests it rejected).
    public func rejected(issuedAt: Date) {
        state.withLock { $0.clock.rejected(tokenIssuedAt: issuedAt) }
    }

    private func refresh() async throws -> (String, Date) {
        defer { state.withLock { $0.fetching = nil } }
        fetches.add(1, ordering: .relaxed)
        // The moment names this token, so it is kept strictly later than the last one's (a late
        // rejection of an older token, fetched in the same second or on a clock that stood
        // still, must not count against it); the fetch gets it in whole seconds (a JWT's iat).
        let moment = now()
        let issued = state.withLock { state in
            state.clock.issuedAt.map { max(moment, $0.addingTimeInterval(0.001)) } ?? moment
        }
        let token: String, lifetime: TimeInterval
        do {
            // The token serves every attempt, so its fetch keeps none's window (RequestWindow).
            (token, lifetime) = try await RequestWindow.outside {
                try await fetch(Date(timeIntervalSince1970: issued.timeIntervalSince1970.rounded(.down)))
            }
        } catch {
            state.withLock {
                $0.failure = (
                    "\(error) (held \(Int(Self.failureHold)) s before the next try)",
                    now().addingTimeInterval(Self.failureHold)
                )
            }
            throw error
        }
        state.withLock { state in
            state.current = token
            state.failure = nil
            state.clock.issued(at: issued, lifetime: lifetime)
        }
        return (token, issued)
    }
}

/// An OAuth2 token endpoint's answer: `{"access_token":…,"expires_in":…}`, or its error.
enum OAuthTokenResponse {
    static func parse(_ response: HTTP2Response) throws -> (token: String, lifetime: TimeInterval) {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        guard response.status == 200, let token = object?["access_token"] as? String, !token.isEmpty else {
            let detail = (object?["error_description"] as? String) ?? (object?["error"] as? String) ?? "no access_token"
            throw OAuthTokenError(description: "the token endpoint answered \(response.status): \(detail)")
        }
        return (token, (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600)
    }
}

/// The token endpoint refused or answered nonsense.
public struct OAuthTokenError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The HTTP/2 clients of a service that takes OAuth2 access tokens: one for its API, and one for
/// its token endpoint (the same client when both are on one origin, as on an emulator).
struct TokenServiceClients {
    let api: HTTP2Client
    let token: HTTP2Client
    /// The token endpoint's path.
    let tokenPath: String

    /// `acceptsHTTP1`: the service may answer over HTTP/1.1 (the Android vendors').
    init(
        baseURL: String, tokenURL: String, caFile: String?, connections: Int, requestTimeout: Duration,
        acceptsHTTP1: Bool = false
    ) throws {
        func client(_ base: String) throws -> HTTP2Client {
            try HTTP2Client(
                configuration: .service(
                    baseURL: base, connections: connections, requestTimeout: requestTimeout, caFile: caFile,
                    acceptsHTTP1: acceptsHTTP1))
        }
        guard let uri = URLComponents(string: tokenURL), let scheme = uri.scheme, let host = uri.host else {
            throw OAuthTokenError(description: "the token URL \(tokenURL) is not a URL")
        }
        let origin = "\(scheme)://\(host)" + (uri.port.map { ":\($0)" } ?? "")
        tokenPath = uri.path.isEmpty ? "/" : uri.path
        api = try client(baseURL)
        token = origin == baseURL ? api : try client(origin)
    }

    func shutdown() async {
        await api.shutdown()
        if token !== api { await token.shutdown() }
    }
}

extension HTTP2ClientConfiguration {
    /// The settings of a push service's client: `connections` connections, a request deadline,
    /// the CA to trust, h2c with prior knowledge for an `http://` emulator.
    static func service(
        baseURL: String, connections: Int, requestTimeout: Duration, caFile: String?, acceptsHTTP1: Bool
    ) -> Self {
        var settings = HTTP2ClientConfiguration(baseURL: baseURL)
        settings.maxConnections = connections
        settings.requestTimeout = requestTimeout
        settings.caFile = caFile
        settings.priorKnowledge = baseURL.hasPrefix("http://")
        settings.acceptsHTTP1 = acceptsHTTP1
        return settings
    }
}
