// The WebSocket protocol (RFC 6455) as a pure state machine: bytes and time in, actions out.
// No imports, so the fuzz target compiles it with the frame parser alone.

/// Limits and timers of one WebSocket connection.
public struct WebSocketLimits: Sendable {
    /// The largest frame payload accepted; a larger one fails the connection with 1009.
    public var maxFrameBytes: Int
    /// The largest message accepted (all its fragments); larger fails with 1009.
    public var maxMessageBytes: Int
    /// After this long with nothing from the peer, a ping asks for a sign of life.
    public var pingInterval: Duration
    /// After this long with nothing at all from the peer, the connection is closed (1001).
    public var idleTimeout: Duration
    /// How long to wait for the peer's close frame after sending ours.
    public var closeTimeout: Duration

    public init(
        maxFrameBytes: Int = 64 * 1024, maxMessageBytes: Int = 1024 * 1024,
        pingInterval: Duration = .seconds(20), idleTimeout: Duration = .seconds(60),
        closeTimeout: Duration = .seconds(5)
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.maxMessageBytes = max(maxFrameBytes, maxMessageBytes)
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.closeTimeout = closeTimeout
    }
}

/// A complete message.
public enum WebSocketMessage: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
}

/// How a connection ended.
public struct WebSocketCloseInfo: Sendable, Equatable {
    /// The close code: the peer's, or ours when we closed first or failed the connection;
    /// 1005 when the peer's close frame had none, 1006 when the connection ended without one.
    public var code: UInt16
    /// The reason text that came with the code.
    public var reason: String
    /// Whether the peer started the close (or vanished).
    public var initiatedByPeer: Bool

    public init(code: UInt16, reason: String, initiatedByPeer: Bool) {
        self.code = code
        self.reason = reason
        self.initiatedByPeer = initiatedByPeer
    }
}

/// One end of a WebSocket connection after the handshake: frames in, messages out, ping/pong,
/// fragmentation, the close handshake with its codes, limits and the idle timer. It never does
/// I/O: every call returns what the caller must do, in order.
///
/// ```swift
/// var machine = WebSocketProtocolMachine(role: .server, limits: WebSocketLimits(), now: clock())
/// for action in machine.receive(bytes, now: clock()) { perform(action) }
/// ```
public struct WebSocketProtocolMachine: Sendable {
    /// What the caller does, in order.
    public enum Action: Sendable, Equatable {
        /// Write these bytes (one or more whole frames).
        case write([UInt8])
        /// Hand a complete message to the application.
        case deliver(WebSocketMessage)
        /// Close the TCP connection once what is written is sent.
        case closeTransport
    }

    private enum State: Sendable {
        case open
        /// We sent a close frame and wait for the peer's until the deadline.
        case closeSent(deadline: UInt64)
        case closed
    }

    public let role: WebSocketRole
    public let limits: WebSocketLimits
    private var parser: WebSocketFrameParser
    private var state = State.open
    private var fragments: [UInt8] = []
    private var fragmentOpcode: WebSocketOpcode?
    private var lastReceived: UInt64
    private var lastPing: UInt64
    private var maskKeys: @Sendable () -> (UInt8, UInt8, UInt8, UInt8)
    private let pingInterval: UInt64
    private let idleTimeout: UInt64
    private let closeTimeout: UInt64
    /// Set once the connection's end is decided; see `closeInfo(transportClosed:)`.
    public private(set) var closeInfo: WebSocketCloseInfo?

    /// `now` is a monotonic reading in nanoseconds; every later call passes the same clock's.
    /// A client needs `maskKeys`, a source of fresh random mask keys (RFC 6455 §5.3).
    public init(
        role: WebSocketRole, limits: WebSocketLimits, now: UInt64,
        maskKeys: @escaping @Sendable () -> (UInt8, UInt8, UInt8, UInt8) = { (0, 0, 0, 0) }
    ) {
        self.role = role
        self.limits = limits
        self.parser = WebSocketFrameParser(role: role, maxFrameBytes: limits.maxFrameBytes)
        self.lastReceived = now
        self.lastPing = now
        self.maskKeys = maskKeys
        pingInterval = Self.nanoseconds(limits.pingInterval)
        idleTimeout = Self.nanoseconds(limits.idleTimeout)
        closeTimeout = Self.nanoseconds(limits.closeTimeout)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Whether messages may still be sent.
    public var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    /// Whether the connection is over (the transport is to be closed or is closed).
    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// How the connection ended, once the transport is gone: what the close handshake
    /// decided, or 1006 when it ended without one.
    public func closeInfo(transportClosed: Bool) -> WebSocketCloseInfo? {
        if let closeInfo { return closeInfo }
        return transportClosed
            ? WebSocketCloseInfo(code: WebSocketCloseCode.abnormal, reason: "", initiatedByPeer: true) : nil
    }

    // MARK: Input

    /// Bytes from the peer.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [Action] {
        if case .closed = state { return [] }
        lastReceived = now
        parser.append(bytes)
        return drainFrames(now: now)
    }

    /// Bytes from the peer.
    public mutating func receive(_ bytes: [UInt8], now: UInt64) -> [Action] {
        bytes.withUnsafeBytes { receive($0, now: now) }
    }

    private mutating func drainFrames(now: UInt64) -> [Action] {
        var actions: [Action] = []
        while true {
            if case .closed = state { return actions }
            switch parser.next() {
            case .needMoreData:
                return actions
            case .failed(let failure):
                actions += fail(failure)
                return actions
            case .frame(let frame):
                actions += handle(frame, now: now)
            }
        }
    }

    private mutating func handle(_ frame: WebSocketFrame, now: UInt64) -> [Action] {
        switch frame.opcode {
        case .ping:
            // Answered until the peer's close arrives, also after ours went (RFC 6455 §5.5.2).
            return [.write(encode(WebSocketFrame(opcode: .pong, payload: frame.payload)))]
        case .pong:
            return []
        case .close:
            return peerClosed(frame.payload)
        case .text, .binary:
            guard isOpen else { return [] }  // after our close frame, data is discarded
            if fragmentOpcode != nil {
                return fail(WebSocketCloseCode.protocolError, "a new message began before the fragmented one ended")
            }
            if frame.fin { return finishMessage(frame.opcode, frame.payload) }
            fragmentOpcode = frame.opcode
            fragments = frame.payload
            return []
        case .continuation:
            guard isOpen else { return [] }
            guard let opcode = fragmentOpcode else {
                return fail(WebSocketCloseCode.protocolError, "a continuation frame without a message to continue")
            }
            if fragments.count + frame.payload.count > limits.maxMessageBytes {
                return fail(
                    WebSocketCloseCode.messageTooBig, "message over the limit of \(limits.maxMessageBytes) bytes")
            }
            fragments += frame.payload
            guard frame.fin else { return [] }
            let payload = fragments
            fragments = []
            fragmentOpcode = nil
            return finishMessage(opcode, payload)
        }
    }

    private mutating func finishMessage(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> [Action] {
        if payload.count > limits.maxMessageBytes {
            return fail(WebSocketCloseCode.messageTooBig, "message over the limit of \(limits.maxMessageBytes) bytes")
        }
        if opcode == .text {
            guard let text = String(validating: payload, as: UTF8.self) else {
                return fail(WebSocketCloseCode.invalidPayload, "a text message that is not UTF-8")
            }
            return [.deliver(.text(text))]
        }
        return [.deliver(.binary(payload))]
    }

    private mutating func peerClosed(_ payload: [UInt8]) -> [Action] {
        var code = UInt16(1005)
        var reason = ""
        if payload.count == 1 { return fail(WebSocketCloseCode.protocolError, "a close frame with a one-byte payload") }
        if payload.count >= 2 {
            code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            if !WebSocketCloseCode.isValidOnTheWire(code) {
                return fail(WebSocketCloseCode.protocolError, "close code \(code) may not be sent")
            }
            guard let text = String(validating: payload[2...], as: UTF8.self) else {
                return fail(WebSocketCloseCode.invalidPayload, "a close reason that is not UTF-8")
            }
            reason = text
        }
        switch state {
        case .open:
            state = .closed
            closeInfo = WebSocketCloseInfo(code: code, reason: reason, initiatedByPeer: true)
            // Echo the code (none when the peer gave none), then end: the server closes TCP first.
            let reply = payload.count >= 2 ? [UInt8(code >> 8), UInt8(code & 0xFF)] : []
            return [.write(encode(WebSocketFrame(opcode: .close, payload: reply))), .closeTransport]
        case .closeSent:
            state = .closed
            return [.closeTransport]
        case .closed:
            return []
        }
    }

    private mutating func fail(_ failure: WebSocketFailure) -> [Action] {
        fail(failure.code, failure.reason)
    }

    /// Fails the connection (RFC 6455 §7.1.7): our close frame if we have not sent one, then
    /// the transport ends without waiting for the peer.
    private mutating func fail(_ code: UInt16, _ reason: String) -> [Action] {
        defer {
            state = .closed
            fragments = []
        }
        switch state {
        case .open:
            closeInfo = WebSocketCloseInfo(code: code, reason: reason, initiatedByPeer: false)
            return [
                .write(
                    encode(
                        WebSocketFrame(
                            opcode: .close, payload: WebSocketFrameEncoder.closePayload(code: code, reason: reason)))),
                .closeTransport,
            ]
        case .closeSent:
            return [.closeTransport]
        case .closed:
            return []
        }
    }

    // MARK: Output

    /// The frame of a message to send, or nil once the connection is closing.
    public func frame(for message: WebSocketMessage) -> [UInt8]? {
        guard isOpen else { return nil }
        switch message {
        case .text(let text): return encode(WebSocketFrame(opcode: .text, payload: Array(text.utf8)))
        case .binary(let bytes): return encode(WebSocketFrame(opcode: .binary, payload: bytes))
        }
    }

    /// Starts the close handshake: our close frame now, the transport once the peer answers
    /// or `closeTimeout` passes (see `tick`). `code` must be one a peer may send.
    public mutating func close(code: UInt16, reason: String, now: UInt64) -> [Action] {
        guard isOpen else { return [] }
        let code = WebSocketCloseCode.isValidOnTheWire(code) ? code : WebSocketCloseCode.internalError
        state = .closeSent(deadline: now + closeTimeout)
        closeInfo = WebSocketCloseInfo(code: code, reason: reason, initiatedByPeer: false)
        return [
            .write(
                encode(
                    WebSocketFrame(
                        opcode: .close, payload: WebSocketFrameEncoder.closePayload(code: code, reason: reason))))
        ]
    }

    /// Timers: a ping after `pingInterval` of silence, the end after `idleTimeout`, and the
    /// end of a close handshake the peer never answered.
    public mutating func tick(now: UInt64) -> [Action] {
        switch state {
        case .closed:
            return []
        case .closeSent(let deadline):
            if now >= deadline {
                state = .closed
                return [.closeTransport]
            }
            return []
        case .open:
            let silence = now &- lastReceived
            if now >= lastReceived, silence >= idleTimeout {
                return fail(WebSocketCloseCode.goingAway, "idle timeout")
            }
            if now >= lastReceived, silence >= pingInterval, now &- lastPing >= pingInterval {
                lastPing = now
                return [.write(encode(WebSocketFrame(opcode: .ping, payload: [])))]
            }
            return []
        }
    }

    private func encode(_ frame: WebSocketFrame) -> [UInt8] {
        WebSocketFrameEncoder.encode(frame, maskKey: role == .client ? maskKeys() : nil)
    }
}
