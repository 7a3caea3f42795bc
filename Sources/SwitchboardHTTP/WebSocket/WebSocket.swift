import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPOSIX

/// Why an upgrade request cannot become a WebSocket: the status, a stable code and a message
/// for the error envelope, and headers to add (`Sec-WebSocket-Version` on a version mismatch).
public struct WebSocketHandshakeError: Error, Sendable, Equatable {
    public var status: Int
    public var code: String
    public var message: String
    public var headers: HTTPHeaders
}

/// The opening handshake, server side (RFC 6455 §4.2).
public enum WebSocketHandshake {
    static let magic = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's key.
    public static func acceptValue(forKey key: String) -> String {
        Data(SHA1.hash(Array((key + magic).utf8))).base64EncodedString()
    }

    /// Checks an upgrade request and returns the `101` head's headers.
    ///
    /// 426 `WEBSOCKET_UPGRADE_REQUIRED` for a request that does not ask for a WebSocket at all,
    /// 426 `WEBSOCKET_VERSION_UNSUPPORTED` (with `Sec-WebSocket-Version: 13`) for another
    /// version, 400 `WEBSOCKET_BAD_HANDSHAKE` for a malformed one.
    public static func validate(_ request: HTTPRequest) throws(WebSocketHandshakeError) -> HTTPHeaders {
        let headers = request.headers
        guard tokens(headers.values("Upgrade")).contains("websocket") else {
            throw WebSocketHandshakeError(
                status: 426, code: "WEBSOCKET_UPGRADE_REQUIRED",
                message: "this resource is a WebSocket: send Upgrade: websocket", headers: ["Upgrade": "websocket"])
        }
        func bad(_ message: String) -> WebSocketHandshakeError {
            WebSocketHandshakeError(
                status: 400, code: "WEBSOCKET_BAD_HANDSHAKE", message: message, headers: HTTPHeaders())
        }
        guard request.method == "GET" else { throw bad("a WebSocket handshake is a GET") }
        guard request.head.version == .http1_1 else { throw bad("a WebSocket handshake needs HTTP/1.1") }
        guard tokens(headers.values("Connection")).contains("upgrade") else {
            throw bad("Connection must include upgrade")
        }
        guard headers.values("Sec-WebSocket-Version").map({ $0.trimmingCharacters(in: .whitespaces) }) == ["13"] else {
            throw WebSocketHandshakeError(
                status: 426, code: "WEBSOCKET_VERSION_UNSUPPORTED",
                message: "only WebSocket version 13 is supported", headers: ["Sec-WebSocket-Version": "13"])
        }
        let keys = headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let key = keys.first?.trimmingCharacters(in: .whitespaces),
            let decoded = Data(base64Encoded: key), decoded.count == 16
        else {
            throw bad("Sec-WebSocket-Key must be 16 bytes in base64")
        }
        return ["Upgrade": "websocket", "Sec-WebSocket-Accept": acceptValue(forKey: key)]
    }

    /// Comma-separated header tokens, lowercased.
    static func tokens(_ values: [String]) -> Set<String> {
        Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }
}

/// What `WebSocket.send` did.
public enum WebSocketSendResult: Sendable, Equatable {
    /// Queued for the socket.
    case queued
    /// Not sent: more than the given number of bytes were still unsent (a slow peer).
    case dropped
    /// Not sent: the connection is closing or closed.
    case closed
}

/// A server-side WebSocket over a taken-over HTTP connection.
///
/// Its callbacks run on the connection's event-loop thread, between socket events, so they
/// must not block; a relay forwards frames from there without a task hop. `send` and `close`
/// may be called from any thread.
///
/// ```swift
/// router.get("/echo") { request in
///     WebSocket.upgrade(request, handlers: .init(onMessage: { socket, message in socket.send(message) }))
/// }
/// ```
public final class WebSocket: HTTPConnectionHandler, Sendable {
    /// What the application hears.
    public struct Handlers: Sendable {
        /// The connection is open (the `101` head is queued).
        public var onOpen: @Sendable (WebSocket) -> Void
        /// A complete message arrived.
        public var onMessage: @Sendable (WebSocket, WebSocketMessage) -> Void
        /// The connection is over; called exactly once, also when it never opened.
        public var onClose: @Sendable (WebSocket, WebSocketCloseInfo) -> Void

        public init(
            onOpen: @escaping @Sendable (WebSocket) -> Void = { _ in },
            onMessage: @escaping @Sendable (WebSocket, WebSocketMessage) -> Void = { _, _ in },
            onClose: @escaping @Sendable (WebSocket, WebSocketCloseInfo) -> Void = { _, _ in }
        ) {
            self.onOpen = onOpen
            self.onMessage = onMessage
            self.onClose = onClose
        }
    }

    private struct State: Sendable {
        var machine: WebSocketProtocolMachine
        var connection: HTTPTakenConnection?
        var finished = false
    }

    private let handlers: Handlers
    private let state: Mutex<State>
    /// The clock in nanoseconds; the monotonic clock unless a test drives its own.
    private let now: @Sendable () -> UInt64

    /// A socket that speaks once a handshake's `101` hands it the connection; see `upgrade`.
    public init(
        limits: WebSocketLimits = WebSocketLimits(), handlers: Handlers,
        now: @escaping @Sendable () -> UInt64 = monotonicNanoseconds
    ) {
        self.handlers = handlers
        self.now = now
        state = Mutex(State(machine: WebSocketProtocolMachine(role: .server, limits: limits, now: now())))
    }

    /// Answers an upgrade request: the `101` head with a socket that takes the connection
    /// over, or the handshake's error through `errorResponse`.
    public static func upgrade(
        _ request: HTTPRequest, limits: WebSocketLimits = WebSocketLimits(), handlers: Handlers,
        errorResponse: (WebSocketHandshakeError) -> HTTPResponse = WebSocket.jsonError
    ) -> HTTPResponse {
        do {
            let headers = try WebSocketHandshake.validate(request)
            return HTTPResponse(switchingProtocols: headers, to: WebSocket(limits: limits, handlers: handlers))
        } catch {
            return errorResponse(error)
        }
    }

    /// The handshake error in the JSON error envelope, with its headers.
    public static func jsonError(_ error: WebSocketHandshakeError) -> HTTPResponse {
        var response = HTTPServerConfiguration.jsonErrorEnvelope(error.status, error.code, error.message)
        for field in error.headers { response.headers.set(field.name, field.value) }
        return response
    }

    /// The peer address as `host:port` once open.
    public var remoteAddress: String? { state.withLock { $0.connection?.remoteAddress } }

    /// Whether messages may still be sent.
    public var isOpen: Bool { state.withLock { $0.connection != nil && $0.machine.isOpen } }

    /// Bytes queued that have not reached the socket yet.
    public var unsentByteCount: Int { state.withLock { $0.connection?.unsentByteCount ?? 0 } }

    /// Shrinks the kernel's send buffer of the connection (see
    /// `HTTPTakenConnection.limitSendBuffer(to:)`); call it from `onOpen`.
    public func limitSendBuffer(to bytes: Int) {
        state.withLock { $0.connection }?.limitSendBuffer(to: bytes)
    }

    /// Sends a message. With `droppingIfUnsentAbove`, a message is not queued while more than
    /// that many bytes wait for a slow peer (for live audio, where late is useless).
    @discardableResult
    public func send(_ message: WebSocketMessage, droppingIfUnsentAbove limit: Int? = nil) -> WebSocketSendResult {
        state.withLock { state in
            guard let connection = state.connection, state.machine.isOpen else { return .closed }
            if let limit, connection.unsentByteCount > limit { return .dropped }
            guard let frame = state.machine.frame(for: message) else { return .closed }
            return connection.send(frame) ? .queued : .closed
        }
    }

    /// Starts the close handshake with `code` (1000 normal, 1001 going away, 1008 policy, or
    /// 3000–4999 of the application's own) and a reason of at most 123 bytes.
    public func close(code: UInt16 = WebSocketCloseCode.normal, reason: String = "") {
        perform { $0.close(code: code, reason: reason, now: now()) }
    }

    /// Runs a machine step under the lock, writes what it wrote in order, then delivers messages
    /// outside the lock (a handler may send from its callback).
    private func perform(_ step: (inout WebSocketProtocolMachine) -> [WebSocketProtocolMachine.Action]) {
        let delivered: [WebSocketMessage] = state.withLock { state in
            guard let connection = state.connection else { return [] }
            var messages: [WebSocketMessage] = []
            for action in step(&state.machine) {
                switch action {
                case .write(let bytes): connection.send(bytes)
                case .deliver(let message): messages.append(message)
                case .closeTransport: connection.close()
                }
            }
            return messages
        }
        for message in delivered { handlers.onMessage(self, message) }
    }

    // MARK: HTTPConnectionHandler (on the loop thread)

    public func connectionStarted(_ connection: HTTPTakenConnection) {
        state.withLock { $0.connection = connection }
        handlers.onOpen(self)
    }

    public func connectionReceived(_ bytes: UnsafeRawBufferPointer) {
        let time = now()
        perform { $0.receive(bytes, now: time) }
    }

    public func connectionTick(monotonicNanoseconds _: UInt64) {
        let time = now()
        perform { $0.tick(now: time) }
    }

    public func connectionShutdownRequested() {
        close(code: WebSocketCloseCode.goingAway, reason: "server shutting down")
    }

    public func connectionClosed() {
        let info: WebSocketCloseInfo? = state.withLock { state in
            if state.finished { return nil }
            state.finished = true
            state.connection = nil
            return state.machine.closeInfo(transportClosed: true)
        }
        if let info { handlers.onClose(self, info) }
    }
}
