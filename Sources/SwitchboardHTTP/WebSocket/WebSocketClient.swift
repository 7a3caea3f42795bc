import CLinux
import Foundation
import Glibc
import Synchronization
import SwitchboardCrypto
import SwitchboardPOSIX

/// Why a client could not open a WebSocket.
public enum WebSocketClientError: Error, Sendable, Equatable {
    /// The TCP connection failed (`errno`).
    case connectFailed(Int32)
    /// The server answered something other than `101`: its status and body.
    case refused(status: Int, body: String)
    /// The answer was `101` but not a valid WebSocket handshake.
    case badHandshake(String)
    /// No complete answer within the timeout, or the connection ended first.
    case noAnswer
}

/// A blocking WebSocket client over plain TCP (IPv4), for developer tools and tests on Linux,
/// where Foundation's `URLSessionWebSocketTask` is not available. One thread of its own reads,
/// answers pings and runs the timers; messages and the close arrive on that thread.
///
/// ```swift
/// let socket = try WebSocketClient.connect(host: "127.0.0.1", port: 8080, path: "/calls/c1/audio",
///     headers: ["Authorization": "Bearer \(token)"], handlers: .init(onMessage: { print($0) }))
/// socket.send(.binary(frame))
/// socket.close()
/// ```
public final class WebSocketClient: Sendable {
    /// What the client hears, on its reader thread.
    public struct Handlers: Sendable {
        public var onMessage: @Sendable (WebSocketMessage) -> Void
        public var onClose: @Sendable (WebSocketCloseInfo) -> Void

        public init(
            onMessage: @escaping @Sendable (WebSocketMessage) -> Void = { _ in },
            onClose: @escaping @Sendable (WebSocketCloseInfo) -> Void = { _ in }
        ) {
            self.onMessage = onMessage
            self.onClose = onClose
        }
    }

    private struct State: Sendable {
        var machine: WebSocketProtocolMachine
        var transportClosed = false
        var info: WebSocketCloseInfo?
    }

    private let fd: Int32
    private let handlers: Handlers
    private let state: Mutex<State>
    private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<WebSocketCloseInfo, Never>])>((false, []))

    private init(fd: Int32, limits: WebSocketLimits, handlers: Handlers) {
        self.fd = fd
        self.handlers = handlers
        state = Mutex(
            State(
                machine: WebSocketProtocolMachine(
                    role: .client, limits: limits, now: monotonicNanoseconds(),
                    maskKeys: {
                        let key = SecureRandom.bytes(4)
                        return (key[0], key[1], key[2], key[3])
                    })))
    }

    /// Connects, performs the opening handshake and starts reading. Blocks the calling thread
    /// for at most `timeout` (call it off Swift's cooperative pool).
    public static func connect(
        host: String, port: Int, path: String, headers: HTTPHeaders = HTTPHeaders(),
        limits: WebSocketLimits = WebSocketLimits(), timeout: Duration = .seconds(10), handlers: Handlers
    ) throws(WebSocketClientError) -> WebSocketClient {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connectFailed(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let (wholeSeconds, attoseconds) = timeout.components
        // Never 0 (which means no timeout at all): at least a millisecond.
        var seconds = timeval(
            tv_sec: Int(max(0, wholeSeconds)),
            tv_usec: max(wholeSeconds > 0 ? 0 : 1000, Int(attoseconds / 1_000_000_000_000)))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if connected != 0 {
            let code = errno
            Glibc.close(fd)
            throw .connectFailed(code)
        }
        TCPSocket.setNoDelay(fd)
        let key = Data(SecureRandom.bytes(16)).base64EncodedString()
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for field in headers { request += "\(field.name): \(field.value)\r\n" }
        request += "\r\n"
        guard sendAll(fd, Array(request.utf8)) else {
            Glibc.close(fd)
            throw .noAnswer
        }
        let leftover: [UInt8]
        do throws(WebSocketClientError) {
            let nanoseconds = UInt64(max(0, wholeSeconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
            leftover = try readHandshakeAnswer(fd, key: key, deadline: monotonicNanoseconds() + nanoseconds)
        } catch {
            Glibc.close(fd)
            throw error
        }
        let client = WebSocketClient(fd: fd, limits: limits, handlers: handlers)
        if !leftover.isEmpty { client.received(leftover) }
        Thread.detachNewThread { client.readLoop() }
        return client
    }

    /// Reads the `101` head and checks it; returns the bytes that came behind it.
    private static func readHandshakeAnswer(
        _ fd: Int32, key: String, deadline: UInt64
    ) throws(WebSocketClientError) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        var contentLength = 0
        while true {
            if let end = headEnd, received.count >= end + contentLength { break }
            let now = monotonicNanoseconds()
            guard now < deadline else { throw .noAnswer }
            var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poll, 1, Int32(min(1000, (deadline - now) / 1_000_000 + 1)))
            if ready <= 0 { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 {
                if headEnd != nil { break }
                throw .noAnswer
            }
            received.append(contentsOf: buffer[0..<count])
            if headEnd == nil, let range = received.firstRange(of: terminator) {
                headEnd = range.upperBound
                let head = String(decoding: received[0..<range.lowerBound], as: UTF8.self)
                if head.hasPrefix("HTTP/1.1 101") { break }
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength =
                        Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        guard let end = headEnd else { throw .noAnswer }
        let head = String(decoding: received[0..<(end - 4)], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        let status = statusParts.count >= 2 ? Int(statusParts[1]) ?? 0 : 0
        guard status == 101 else {
            let body = String(decoding: received[end..<min(received.count, end + contentLength)], as: UTF8.self)
            throw .refused(status: status, body: body)
        }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard fields["upgrade"]?.lowercased() == "websocket" else { throw .badHandshake("Upgrade is not websocket") }
        guard WebSocketHandshake.tokens([fields["connection"] ?? ""]).contains("upgrade") else {
            throw .badHandshake("Connection is not upgrade")
        }
        guard fields["sec-websocket-accept"] == WebSocketHandshake.acceptValue(forKey: key) else {
            throw .badHandshake("wrong Sec-WebSocket-Accept")
        }
        return Array(received[end...])
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    // MARK: Using it

    /// Whether messages may still be sent.
    public var isOpen: Bool { state.withLock { !$0.transportClosed && $0.machine.isOpen } }

    /// Sends a message; false once the connection is closing or gone. Blocks while the socket's
    /// buffer is full (at most the connect timeout).
    @discardableResult
    public func send(_ message: WebSocketMessage) -> Bool {
        state.withLock { state in
            guard !state.transportClosed, let frame = state.machine.frame(for: message) else { return false }
            return Self.sendAll(fd, frame)
        }
    }

    /// Starts the close handshake; `closed()` then returns how it ended.
    public func close(code: UInt16 = WebSocketCloseCode.normal, reason: String = "") {
        perform { $0.close(code: code, reason: reason, now: monotonicNanoseconds()) }
    }

    /// Waits until the connection is over and returns how it ended.
    public func closed() async -> WebSocketCloseInfo {
        await withCheckedContinuation { continuation in
            let info: WebSocketCloseInfo? = finished.withLock { finished in
                if finished.done { return state.withLock { $0.info } }
                finished.waiters.append(continuation)
                return nil
            }
            if let info { continuation.resume(returning: info) }
        }
    }

    /// Drops the TCP connection without a close handshake (a phone losing its network).
    public func abort() {
        state.withLock { state in
            if !state.transportClosed { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    // MARK: The reader thread

    private func readLoop() {
        nameCurrentThread("sb-ws-client")
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if state.withLock({ $0.transportClosed }) { break }
            var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poll, 1, 100)
            if ready > 0 {
                let count = read(fd, &buffer, buffer.count)
                if count > 0 {
                    received(Array(buffer[0..<count]))
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    break
                }
            }
            perform { $0.tick(now: monotonicNanoseconds()) }
        }
        let info = state.withLock { state in
            state.transportClosed = true
            let info =
                state.machine.closeInfo(transportClosed: true)
                ?? WebSocketCloseInfo(code: WebSocketCloseCode.abnormal, reason: "", initiatedByPeer: true)
            state.info = info
            return info
        }
        Glibc.close(fd)
        handlers.onClose(info)
        let waiters = finished.withLock { finished in
            finished.done = true
            defer { finished.waiters = [] }
            return finished.waiters
        }
        for waiter in waiters { waiter.resume(returning: info) }
    }

    private func received(_ bytes: [UInt8]) {
        perform { $0.receive(bytes, now: monotonicNanoseconds()) }
    }

    private func perform(_ step: (inout WebSocketProtocolMachine) -> [WebSocketProtocolMachine.Action]) {
        let messages: [WebSocketMessage] = state.withLock { state in
            guard !state.transportClosed else { return [] }
            var messages: [WebSocketMessage] = []
            for action in step(&state.machine) {
                switch action {
                case .write(let bytes): _ = Self.sendAll(fd, bytes)
                // A client may close TCP once the close handshake is done; the reader sees the end.
                case .closeTransport: shutdown(fd, Int32(SHUT_RDWR))
                case .deliver(let message): messages.append(message)
                }
            }
            return messages
        }
        for message in messages { handlers.onMessage(message) }
    }
}
