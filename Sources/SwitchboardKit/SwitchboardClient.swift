import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SwitchboardWire

/// An error answered by the server, with its stable code (`CALL_BUSY`, `UNAUTHORIZED`, …).
public struct SwitchboardAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The server's error code (``ErrorCode``'s catalogue); ``ErrorCode/transport`` when no
    /// answer came back, ``ErrorCode/badResponse`` when one did not decode.
    public let code: ErrorCode
    /// The server's message.
    public let message: String
    /// The request field at fault, when the server names one.
    public let field: String?

    public var description: String { "\(status) \(code): \(message)" }

    public init(status: Int, code: ErrorCode, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }
}

/// Sends one request. The seam where an app plugs in its own trust rules (a self-signed
/// certificate for its one host) or a test double.
public protocol HTTPTransport: Sendable {
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
    /// Sends a request that is `repeatable` when the server treats it the same however often
    /// it arrives, so a transport may send it more than once (``HedgingTransport``). The
    /// default ignores the flag.
    func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse)
    /// Sends a held request (one the server answers only when something happens, the same way
    /// however often it arrives) as `copies` copies at once, on connections of their own where
    /// the transport has several, and answers with the first success; the others are left to
    /// end by themselves, since cancelling an HTTP/1.1 request closes its connection. The
    /// default sends it once.
    func sendHeld(_ request: URLRequest, copies: Int) async throws -> (Data, HTTPURLResponse)
    /// Opens connections ahead of need by fetching `url`. The default does nothing.
    func warm(_ url: URL)
    /// Lets the requests in flight finish, then closes the connections for good (the
    /// transport is not used again). The default does nothing.
    func invalidate()
}

extension HTTPTransport {
    public func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        try await send(request)
    }

    public func sendHeld(_ request: URLRequest, copies: Int) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    public func warm(_ url: URL) {}

    public func invalidate() {}
}

/// The default transport: `URLSession` with the system's trust.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    public init(session: URLSession = URLSession(configuration: .ephemeral)) {
        self.session = session
    }

    /// `finishTasksAndInvalidate()`: the session's connections close once its tasks are done.
    public func invalidate() { session.finishTasksAndInvalidate() }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation can trap when a data task is cancelled just as it finishes
        // (`URLSession.behaviour(for:)`), which cancelling a long poll invites. So on Linux a
        // cancelled request is abandoned, not cancelled: the caller gets CancellationError at
        // once and the task ends on its own (answer, server close or timeout).
        let waiter = OneShot<(Data, URLResponse)>()
        let (data, response) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.arm(continuation)
                session.dataTask(with: request) { data, response, error in
                    if let data, let response {
                        waiter.resume(.success((data, response)))
                    } else {
                        waiter.resume(.failure(error ?? URLError(.badServerResponse)))
                    }
                }.resume()
            }
        } onCancel: {
            waiter.resume(.failure(CancellationError()))
        }
        #else
        let (data, response) = try await session.data(for: request)
        #endif
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }
}

/// A continuation resumed at most once, whichever comes first: the answer or a cancellation
/// (which may come before the continuation exists).
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var early: Result<Value, any Error>?
        var done = false
    }

    private let state = LockedState(State())

    package init() {}

    package func arm(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    package func resume(_ result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.done else { return nil }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}

/// The Switchboard API as async methods. Stateless apart from the token it is given.
public struct SwitchboardClient: Sendable {
    /// The server's base URL.
    public let baseURL: URL
    /// The bearer token, when signed in.
    public var token: String?
    let transport: any HTTPTransport
    /// Long polls ride their own connections, so a held poll never makes a call request wait
    /// for a new connection (a TCP handshake, which a lossy network can stretch to seconds).
    let eventTransport: any HTTPTransport
    /// While a call is live its watcher's polls are held on two connections at once
    /// (``callEvents(after:wait:)``), so a lost segment on one does not delay the answer.
    let callEventTransport: any HTTPTransport
    /// The round trips and losses of this client's requests (copies of the client share it),
    /// what an adaptive answer deadline is computed from.
    public let networkQuality: NetworkQualityMonitor

    /// - Parameters:
    ///   - transport: sends every request but long polls; by default a ``HedgingTransport``
    ///     over four connections, which on a good network sends each request once and on a
    ///     lossy one races copies of repeatable requests (pass a `URLSessionTransport` for one
    ///     connection and no copies).
    ///   - eventTransport: sends long polls (`GET /events`); by default a session of its own.
    ///     Pass the same transport to share one.
    ///   - callEventTransport: sends the polls of ``callEvents(after:wait:)``; by default
    ///     `eventTransport` when one is given, else a ``HedgingTransport`` over two connections.
    ///   - networkQuality: where round trips and losses are recorded (pass one to share it).
    public init(
        baseURL: URL, token: String? = nil, transport: any HTTPTransport = HedgingTransport(),
        eventTransport: (any HTTPTransport)? = nil, callEventTransport: (any HTTPTransport)? = nil,
        networkQuality: NetworkQualityMonitor = NetworkQualityMonitor()
    ) {
        self.networkQuality = networkQuality
        self.baseURL = baseURL
        self.token = token
        self.transport = transport
        self.eventTransport = eventTransport ?? URLSessionTransport()
        self.callEventTransport = callEventTransport ?? eventTransport ?? HedgingTransport(lanes: 2)
    }

    // MARK: Accounts

    public func register(username: String, password: String, displayName: String) async throws -> AuthSession {
        try await call(
            "POST", "/auth/register",
            body: RegisterRequest(username: username, password: password, displayName: displayName))
    }

    public func login(username: String, password: String) async throws -> AuthSession {
        try await call("POST", "/auth/login", body: LoginRequest(username: username, password: password))
    }

    public func logout() async throws {
        try await send("POST", "/auth/logout")
    }

    public func me() async throws -> Me {
        try await call("GET", "/me")
    }

    // MARK: Friends and groups (whom one may call)

    public func sendFriendRequest(toUserID userID: String) async throws -> FriendRequest {
        try await call("POST", "/friend-requests", body: SendFriendRequest(userId: userID))
    }

    /// Accepts a request; the answer names the pair's conversation (the scope of 1:1 calls).
    public func acceptFriendRequest(_ requestID: String) async throws -> Friend {
        try await call("POST", "/friend-requests/\(QueryEncoding.encode(requestID))/accept")
    }

    public func createGroup(name: String, memberIDs: [String]) async throws -> Group {
        try await call("POST", "/groups", body: CreateGroup(name: name, memberIds: memberIDs))
    }

    // MARK: Events

    /// One long poll: events after `after`, held up to `wait` seconds.
    public func events(after: Int64, wait: Int) async throws -> EventsPage {
        try await poll(after: after, wait: wait, via: eventTransport, repeatable: false)
    }

    /// A long poll while a call is live: held on two connections (the second a moment after
    /// the first), the first answer wins. Twice the polls, only while calls are live, for an
    /// answer or hang-up that no single lost segment can hold back.
    public func callEvents(after: Int64, wait: Int) async throws -> EventsPage {
        try await poll(after: after, wait: wait, via: callEventTransport, heldCopies: 2)
    }

    private func poll(
        after: Int64, wait: Int, via transport: any HTTPTransport, repeatable: Bool = false, heldCopies: Int = 0
    ) async throws -> EventsPage {
        try await call(
            "GET", "/events", query: [("after", String(after)), ("wait", String(wait))],
            timeout: TimeInterval(wait + 10), via: transport,
            repeatable: repeatable, heldCopies: heldCopies)
    }

    // MARK: Calls

    public func createCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID = UUID()
    ) async throws -> CallInfo {
        // Repeatable: the server answers a repeated clientId with the same call.
        try await call(
            "POST", "/calls",
            body: CreateCall(
                scopeKind: scopeKind, scopeId: scopeID, mode: mode, clientId: clientID.uuidString.lowercased()),
            repeatable: true)
    }

    public func call(_ callID: String) async throws -> CallInfo {
        try await call("GET", "/calls/\(QueryEncoding.encode(callID))")
    }

    public func activeCalls() async throws -> [CallInfo] {
        try await call("GET", "/calls/active")
    }

    /// The newest ended calls of a conversation or group (at most 100).
    public func callHistory(scopeKind: ScopeKind, scopeID: String) async throws -> [CallInfo] {
        try await call("GET", "/calls/history", query: [("scopeKind", scopeKind.rawValue), ("scopeId", scopeID)])
    }

    /// Accepts, declines, joins, leaves or cancels a call.
    public func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo {
        // Repeatable: a repeated accept answers the call unchanged, any other repeat 409 (which
        // a hedging transport holds back while the first copy's answer is on its way).
        try await call("POST", "/calls/\(QueryEncoding.encode(callID))/\(action.rawValue)", repeatable: true)
    }

    /// Accepts a ringing call; with `withMediaToken` the answer carries the media token too.
    public func accept(_ callID: String, withMediaToken: Bool) async throws -> CallWithMedia {
        // The query form of {"mediaToken": true}: without a body the request leaves as one
        // packet (URLSession on Linux writes a body separately), so a lossy link has one
        // chance fewer to stall it.
        try await call(
            "POST", "/calls/\(QueryEncoding.encode(callID))/accept",
            query: withMediaToken ? [("mediaToken", "true")] : [], repeatable: true)
    }

    public func mediaToken(forCall callID: String) async throws -> MediaToken {
        try await call("POST", "/calls/\(QueryEncoding.encode(callID))/media-token", repeatable: true)
    }

    /// The caller's media token, asked for while its call still rings: the server holds the
    /// request up to `seconds` (0–25) and answers once the callee answered (the token) or the
    /// call ended (403 `NOT_PARTICIPANT`, also when the wait ran out).
    ///
    /// Two copies go at once on the connections the dial just used (`sendHeld`), so one lost
    /// segment does not decide; the one that loses is not cancelled (that would close its
    /// connection) but ends by itself, answered at the same moment.
    public func mediaToken(forCall callID: String, waitingUpTo seconds: Int) async throws -> MediaToken {
        let wait = min(max(seconds, 0), 25)
        return try await call(
            "POST", "/calls/\(QueryEncoding.encode(callID))/media-token", query: [("wait", String(wait))],
            timeout: TimeInterval(wait + 10), heldCopies: 2)
    }

    // MARK: Push devices

    public func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment
    ) async throws -> VoIPDevice {
        try await registerVoIPDevice(
            deviceID: deviceID, pushToken: pushToken, environment: environment, payloadKey: nil)
    }

    /// Registers the VoIP token with the key its pushes are to be encrypted with (SPEC §3);
    /// `payloadKey` nil: plain pushes. The server refuses a key with 409
    /// `DATA_ENCRYPTION_DISABLED` when it has no `dataEncryptionKey`.
    public func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration?
    ) async throws -> VoIPDevice {
        try await call(
            "POST", "/voip/devices",
            body: RegisterVoIPDevice(
                deviceId: deviceID.uuidString.lowercased(), pushToken: pushToken, environment: environment,
                payloadKey: payloadKey),
            repeatable: true)
    }

    /// Registers every push token this installation has now, by channel (`POST /push/devices`):
    /// on iOS `ios-voip` and `ios-alert`, on Android `fcm` and the maker's channel. Tokens it
    /// registered before and no longer lists are removed.
    public func registerPushDevice(_ device: RegisterPushDevice) async throws -> PushDeviceInfo {
        try await call("POST", "/push/devices", body: device, repeatable: true)
    }

    /// Forgets this installation and all its push tokens (`DELETE /push/devices/{deviceId}`).
    public func unregisterPushDevice(deviceID: UUID) async throws {
        try await send("DELETE", "/push/devices/\(QueryEncoding.encode(deviceID.uuidString.lowercased()))")
    }

    /// Forgets this installation's push token (`DELETE /voip/devices/{deviceId}`), e.g. when
    /// PushKit invalidates it.
    public func unregisterVoIPDevice(deviceID: UUID) async throws {
        try await send("DELETE", "/voip/devices/\(QueryEncoding.encode(deviceID.uuidString.lowercased()))")
    }

    // MARK: Connections

    /// Opens connections to the server ahead of need (``HTTPTransport/warm(_:)``; a plain
    /// `URLSessionTransport` does nothing): the coordinator calls it when a VoIP push wakes
    /// the app, so the answer does not wait for a handshake.
    public func warmUp() {
        if let url = healthURL { transport.warm(url) }
    }

    /// `GET /healthz`, what warming connections asks for.
    private var healthURL: URL? {
        var text = baseURL.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        return URL(string: text + "/healthz")
    }

    // MARK: Plumbing

    private struct Empty: Encodable {}

    func call<Response: Decodable>(
        _ method: String, _ path: String, query: [(String, String)] = [], timeout: TimeInterval = 30,
        via: (any HTTPTransport)? = nil,
        repeatable: Bool? = nil, heldCopies: Int = 0
    ) async throws -> Response {
        try await call(
            method, path, query: query, body: Optional<Empty>.none, timeout: timeout, via: via, repeatable: repeatable,
            heldCopies: heldCopies)
    }

    func call<Body: Encodable, Response: Decodable>(
        _ method: String, _ path: String, query: [(String, String)] = [], body: Body?, timeout: TimeInterval = 30,
        via: (any HTTPTransport)? = nil, repeatable: Bool? = nil, heldCopies: Int = 0
    ) async throws -> Response {
        let data = try await send(
            method, path, query: query, body: body, timeout: timeout, via: via, repeatable: repeatable,
            heldCopies: heldCopies)
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw SwitchboardAPIError(
                status: 200, code: .badResponse, message: "the server's answer did not decode: \(error)", field: nil)
        }
    }

    @discardableResult
    func send(_ method: String, _ path: String) async throws -> Data {
        try await send(method, path, query: [], body: Optional<Empty>.none, timeout: 30)
    }

    @discardableResult
    /// `repeatable`: whether the server treats the request the same however often it arrives,
    /// so a hedging transport may send copies; by default reads (`GET`) and `DELETE`s are.
    /// `heldCopies` > 0: a held request, sent as that many copies at once (`sendHeld`).
    func send<Body: Encodable>(
        _ method: String, _ path: String, query: [(String, String)], body: Body?, timeout: TimeInterval,
        via: (any HTTPTransport)? = nil,
        repeatable: Bool? = nil, heldCopies: Int = 0
    ) async throws -> Data {
        var text = baseURL.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty { text += "?" + QueryEncoding.query(query) }
        guard let url = URL(string: text) else {
            throw SwitchboardAPIError(
                status: 0, code: .badRequest, message: "cannot form a URL from \(text)", field: nil)
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONEncoder().encode(body)
        }
        let data: Data, response: HTTPURLResponse
        // A held request's time is the server's hold, not a round trip: it is not measured.
        let held = heldCopies > 0 || query.contains { $0.0 == "wait" }
        let sent = networkQuality.moment
        do {
            let transport = via ?? transport
            if heldCopies > 0 {
                (data, response) = try await transport.sendHeld(request, copies: heldCopies)
            } else {
                (data, response) = try await transport.send(
                    request, repeatable: repeatable ?? (method == "GET" || method == "DELETE"))
            }
            if !held { networkQuality.recordAnswer(sentAt: sent) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if !held { networkQuality.recordLoss() }
            throw SwitchboardAPIError(status: 0, code: .transport, message: String(describing: error), field: nil)
        }
        guard (200..<300).contains(response.statusCode) else {
            // An answer without the envelope (a proxy's page) keeps its status under a code
            // outside the catalogue.
            let envelope = try? JSONDecoder().decode(ErrorEnvelope.self, from: data)
            throw SwitchboardAPIError(
                status: response.statusCode,
                code: envelope?.error.code ?? ErrorCode(rawValue: "HTTP_\(response.statusCode)"),
                message: envelope?.error.message ?? "", field: envelope?.error.field)
        }
        return data
    }
}
