import Foundation
import Glibc
import Synchronization
import SwitchboardAPNsEmulator
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardPOSIX

// The push relay's protocol, one TCP connection per phone:
//
//   phone → relay, once, first:   <token> <after>\n
//       token   the VoIP device token in hex (1...200 hex digits, any case)
//       after   a decimal inbox index ≥ 0: the relay streams the pushes with a higher index
//               ("<token>\n" alone means after 0: every push the inbox still holds)
//       A line that is malformed or longer than 512 bytes, or none within 30 s, closes the
//       connection without an answer. Bytes after the line are read and ignored.
//
//   relay → phone, per push, in inbox order:   LENGTH JSON
//       LENGTH  4 bytes, big-endian: the byte count of JSON (at most 1 MiB)
//       JSON    {"index":N,"receivedAtMs":T,"payload":{…}}
//               index: the emulator's inbox index (1, 2, …), receivedAtMs: when the emulator
//               accepted the push (ms since 1970), payload: the push's JSON object verbatim
//
// A phone that reconnects sends the highest index it has received as `after`, so nothing is
// lost or repeated across connections.

/// A failure of the push relay or of a relayed push source. `code` is stable.
public struct PushRelayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, as a stable snake_case string.
    public enum Code: String, Sendable {
        /// The listening socket could not be bound.
        case bindFailed = "bind_failed"
        /// `start()` on a relay or source that was started or stopped before.
        case alreadyStarted = "already_started"
        /// A source that was stopped was asked for pushes.
        case stopped
        /// A frame that is too long or not a push: the peer is not a push relay.
        case badFrame = "bad_frame"
        /// Another system call failed.
        case systemCall = "system_call"
    }

    /// What kind of failure.
    public let code: Code
    /// The explanation.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// The APNs → phone leg over a real, long-lived TCP connection per phone, as APNs reaches a
/// real phone: the relay streams every push the in-process emulator accepts for a token to
/// the connection that asked for that token (the protocol is at the top of this file).
///
/// One thread accepts and one thread per connection writes, with `poll`; each connection's
/// pushes are awaited from the emulator's inbox by a task that never blocks. `stop()` (or
/// `deinit`) closes everything and joins every thread.
///
/// ```swift
/// let relay = PushRelay(emulator: stack.emulator, listen: IPv4Endpoint(host: link.rootAddress, port: 0))
/// let port = try relay.start()
/// let source = RelayedPushSource(relay: IPv4Endpoint(host: link.namespaceAddress, port: proxyPort), token: token)
/// …
/// relay.stop()
/// ```
public final class PushRelay: Sendable {
    private enum Lifecycle {
        case idle
        case running(RelayCore, acceptor: JoinableThread)
        case stopped
    }

    /// The emulator whose inboxes are relayed.
    public let emulator: APNsEmulator
    /// Where it listens (port 0: the kernel picks).
    public let listen: IPv4Endpoint
    private let counters = RelayCounters()
    private let lifecycle = Mutex(Lifecycle.idle)

    /// Creates a relay; nothing listens until `start()`.
    public init(emulator: APNsEmulator, listen: IPv4Endpoint) {
        self.emulator = emulator
        self.listen = listen
    }

    deinit { stop() }

    /// Binds the listening socket and starts accepting; returns the port.
    @discardableResult
    public func start() throws(PushRelayError) -> Int {
        try lifecycle.withLock { state throws(PushRelayError) -> Int in
            guard case .idle = state else { throw PushRelayError(.alreadyStarted, "a relay starts once; make a new one") }
            let core = try RelayCore(emulator: emulator, listen: listen, counters: counters)
            do throws(PushRelayError) {
                state = .running(core, acceptor: try JoinableThread.relay(name: "sb-push-relay") { core.acceptLoop() })
            } catch {
                core.closeDescriptors()
                throw error
            }
            return core.port
        }
    }

    /// The listening port while running, else `nil`.
    public var port: Int? {
        lifecycle.withLock { state in
            if case .running(let core, _) = state { return core.port }
            return nil
        }
    }

    /// Connections accepted since start.
    public var connectionsAccepted: Int { counters.withLock { $0.accepted } }
    /// Connections open now.
    public var openConnections: Int { counters.withLock { $0.open } }
    /// Pushes handed to connections (framed and queued for writing).
    public var pushesRelayed: Int { counters.withLock { $0.relayed } }

    /// Stops accepting, closes every connection and returns once every thread has ended and
    /// every descriptor is closed. Calling it again does nothing.
    public func stop() {
        let running = lifecycle.withLock { state -> (RelayCore, JoinableThread)? in
            defer { state = .stopped }
            if case .running(let core, let acceptor) = state { return (core, acceptor) }
            return nil
        }
        guard let (core, acceptor) = running else { return }
        core.wake.ring()
        acceptor.join()
        core.joinConnections()
        core.closeDescriptors()
    }
}

/// The relay's counters, shared by its threads and still readable after `stop()`.
private final class RelayCounters: Sendable {
    struct Values {
        var accepted = 0
        var open = 0
        var relayed = 0
    }

    private let values = Mutex(Values())

    func withLock<T>(_ body: (inout Values) -> T) -> T { values.withLock { body(&$0) } }
}

/// What the relay's accepting thread and connection threads share.
private final class RelayCore: Sendable {
    private struct Registry {
        var threads: [Int: JoinableThread] = [:]
        var finished: [Int] = []
        var next = 0
    }

    let emulator: APNsEmulator
    let counters: RelayCounters
    let listenFD: Int32
    let port: Int
    /// Rung once by `stop()` and never drained: every poll that includes it returns from then on.
    let wake: WakePipe
    private let registry = Mutex(Registry())

    init(emulator: APNsEmulator, listen: IPv4Endpoint, counters: RelayCounters) throws(PushRelayError) {
        self.emulator = emulator
        self.counters = counters
        do throws(SystemCallError) {
            let (fd, address) = try TCPSocket.listen(host: listen.host, port: listen.port, backlog: 256)
            (listenFD, port) = (fd, address.port)
        } catch where error.call.hasPrefix("bind") {
            throw PushRelayError(.bindFailed, "the push relay cannot listen on \(listen): \(describeErrno(error.errno))")
        } catch {
            throw PushRelayError(.systemCall, error.description)
        }
        do throws(PushRelayError) {
            wake = try WakePipe()
        } catch {
            close(listenFD)
            throw error
        }
    }

    func acceptLoop() {
        var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            do {
                while let fd = try TCPSocket.accept(listenFD) { startConnection(fd) }
            } catch {
                usleep(50_000)  // EMFILE and the like: back off rather than spin on a readable socket
            }
            reapFinished()
        }
    }

    private func startConnection(_ fd: Int32) {
        counters.withLock {
            $0.accepted += 1
            $0.open += 1
        }
        do {
            try registry.withLock { registry throws(PushRelayError) in
                let index = registry.next
                registry.next += 1
                // Made under the lock, so the thread's `connectionEnded` always finds its entry.
                registry.threads[index] = try JoinableThread.relay(name: "sb-push-relay") { [self] in
                    RelayConnection(core: self, fd: fd).run()
                    connectionEnded(index)
                }
            }
        } catch {
            close(fd)
            counters.withLock { $0.open -= 1 }
        }
    }

    private func connectionEnded(_ index: Int) {
        counters.withLock { $0.open -= 1 }
        registry.withLock { $0.finished.append(index) }
    }

    private func reapFinished() {
        let ended = registry.withLock { registry in
            defer { registry.finished = [] }
            return registry.finished.compactMap { registry.threads.removeValue(forKey: $0) }
        }
        ended.forEach { $0.join() }
    }

    /// Joins every connection thread; call after the acceptor ended, so no new ones start.
    func joinConnections() {
        let threads = registry.withLock { registry in
            defer { registry = Registry() }
            return Array(registry.threads.values)
        }
        threads.forEach { $0.join() }
    }

    func closeDescriptors() {
        close(listenFD)
        wake.close()
    }
}

/// One phone's connection to the relay: its thread reads the request line and writes frames;
/// a task awaits the emulator's inbox and queues frames for it.
private final class RelayConnection: Sendable {
    private struct Outbox {
        var bytes: [UInt8] = []
        var feeder: Task<Void, Never>?
        var closed = false
    }

    let core: RelayCore
    let fd: Int32
    /// Rung by the feeder when it queued frames; closed (under `outbox`'s lock) when the
    /// connection ends, so the feeder never writes to a descriptor number reused since.
    private let notify: WakePipe?
    private let outbox = Mutex(Outbox())

    init(core: RelayCore, fd: Int32) {
        self.core = core
        self.fd = fd
        notify = try? WakePipe()
    }

    func run() {
        defer { finish() }
        guard let notify, let request = readRequest() else { return }
        startFeeder(request)
        var pending: [UInt8] = [], offset = 0
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let wantsOut = offset < pending.count
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN) | (wantsOut ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: core.wake.readFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: notify.readFD, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&fds, 3, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            if fds[2].revents != 0 {
                notify.drain()
                pending += outbox.withLock { outbox in
                    defer { outbox.bytes = [] }
                    return outbox.bytes
                }
            }
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let count = read(fd, &scratch, scratch.count)
                if count == 0 { return }
                if count < 0, errno != EAGAIN, errno != EINTR { return }
            }
            if offset < pending.count {
                let written = pending[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 {
                    offset += written
                } else if written < 0, errno != EAGAIN, errno != EINTR {
                    return
                }
            }
            if offset == pending.count {
                pending.removeAll(keepingCapacity: true)
                offset = 0
            }
        }
    }

    /// The request line, or `nil` when it is malformed, too long or late, or the relay stops.
    private func readRequest() -> PushRelayRequest? {
        var line: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 512)
        let deadline = monotonicSeconds() + 30
        while line.count <= PushRelayRequest.maximumLength {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return nil }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: core.wake.readFD, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Int32((left * 1000).rounded(.up)))
            if ready < 0, errno != EINTR { return nil }
            if fds[1].revents != 0 { return nil }
            guard ready > 0 else { continue }
            // Peeked first, so that only the line is consumed (what follows is read and ignored later).
            let count = recv(fd, &scratch, scratch.count, Int32(MSG_PEEK))
            if count == 0 { return nil }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return nil
            }
            let take = scratch[0..<count].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? count
            _ = read(fd, &scratch, take)
            line += scratch[0..<take]
            if line.last == UInt8(ascii: "\n") { return PushRelayRequest(line: String(decoding: line.dropLast(), as: UTF8.self)) }
        }
        return nil
    }

    private func startFeeder(_ request: PushRelayRequest) {
        let emulator = core.emulator
        let task = Task.detached { [self] in
            var cursor = request.after
            while !Task.isCancelled {
                let messages = await emulator.inbox(token: request.token, after: cursor, waitingUpTo: 30)
                guard let last = messages.last else { continue }
                cursor = last.index
                let frames = messages.flatMap { PushRelayFrame.encode(index: $0.index, receivedAtMs: $0.receivedAt, payload: $0.payload) }
                guard enqueue(frames, count: messages.count) else { return }
            }
        }
        let closed = outbox.withLock { outbox in
            outbox.feeder = task
            return outbox.closed
        }
        if closed { task.cancel() }
    }

    /// Queues `count` pushes' frames for the thread; `false` once the connection has ended.
    private func enqueue(_ frames: [UInt8], count: Int) -> Bool {
        outbox.withLock { outbox in
            guard !outbox.closed else { return false }
            outbox.bytes += frames
            // Counted before the thread can write them, so a phone never sees a push the count lacks.
            core.counters.withLock { $0.relayed += count }
            notify?.ring()
            return true
        }
    }

    private func finish() {
        let feeder = outbox.withLock { outbox -> Task<Void, Never>? in
            outbox.closed = true
            notify?.close()
            return outbox.feeder
        }
        feeder?.cancel()
        close(fd)
    }
}

/// The line a phone sends first: `<token> <after>`.
public struct PushRelayRequest: Sendable, Equatable {
    /// The longest line accepted, newline excluded.
    public static let maximumLength = 512

    /// The device token, lower-case hex.
    public var token: String
    /// Stream the pushes with an inbox index above this.
    public var after: Int

    /// Creates a request.
    public init(token: String, after: Int = 0) {
        self.token = token.lowercased()
        self.after = after
    }

    /// Parses a line without its newline; `nil` when malformed.
    public init?(line: String) {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let token = parts.first, (1...200).contains(token.count),
            token.allSatisfy(\.isHexDigit), token.allSatisfy(\.isASCII)
        else { return nil }
        var after = 0
        if parts.count == 2 {
            guard let number = Int(parts[1]), number >= 0 else { return nil }
            after = number
        }
        self.init(token: String(token), after: after)
    }

    /// The line to send, with its newline.
    public var line: String { "\(token) \(after)\n" }
}

/// One relayed push as the phone received it.
public struct RelayedPush: Sendable, Equatable {
    /// The emulator's inbox index.
    public var index: Int
    /// When the emulator accepted the push, in milliseconds since 1970.
    public var receivedAtMs: Int64
    /// When the frame was read off the phone's connection.
    public var deliveredAt: Date
    /// The push's JSON payload.
    public var payload: Data
}

/// The relay's frames: a 4-byte big-endian length, then JSON.
public enum PushRelayFrame {
    /// The largest frame body accepted.
    public static let maximumLength = 1 << 20

    /// A frame for one push; `payload` is a JSON object (the emulator only accepts those).
    public static func encode(index: Int, receivedAtMs: Int64, payload: [UInt8]) -> [UInt8] {
        let body = Array(#"{"index":\#(index),"receivedAtMs":\#(receivedAtMs),"payload":"#.utf8) + payload + [UInt8(ascii: "}")]
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    /// Collects bytes as they arrive and hands out whole frame bodies.
    public struct Decoder: Sendable {
        private var buffer: [UInt8] = []
        private var offset = 0

        /// Creates an empty decoder.
        public init() {}

        /// Adds bytes read from the connection.
        public mutating func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
            if offset > 0, offset == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                offset = 0
            }
            buffer.append(contentsOf: bytes)
        }

        /// The next whole frame body, `nil` until one is complete; throws on a length over
        /// ``maximumLength`` (the stream is then unusable).
        public mutating func next() throws(PushRelayError) -> [UInt8]? {
            guard buffer.count - offset >= 4 else { return nil }
            let length = buffer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= maximumLength else {
                throw PushRelayError(.badFrame, "a relay frame of \(length) bytes (more than \(maximumLength)): not a push relay")
            }
            guard buffer.count - offset - 4 >= length else { return nil }
            let body = Array(buffer[offset + 4..<offset + 4 + length])
            offset += 4 + length
            if offset > 65536 {
                buffer.removeFirst(offset)
                offset = 0
            }
            return body
        }
    }

    /// Reads a frame body; `nil` when it is not a push frame.
    public static func decode(_ body: [UInt8], deliveredAt: Date) -> RelayedPush? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let index = (object["index"] as? NSNumber)?.intValue, let receivedAt = (object["receivedAtMs"] as? NSNumber)?.int64Value,
            let payload = object["payload"] as? [String: Any], let data = try? JSONSerialization.data(withJSONObject: payload)
        else { return nil }
        return RelayedPush(index: index, receivedAtMs: receivedAt, deliveredAt: deliveredAt, payload: data)
    }
}

/// A simulated phone's pushes from a ``PushRelay`` over one long-lived TCP connection (through
/// whatever lies between: the impairment proxy, the lossy kernel link), reconnecting when it
/// drops without losing or repeating a push.
///
/// A thread of its own connects, sends the request line and reads frames; `pushes(after:wait:)`
/// hands out what it has read. It starts on `start()` or the first `pushes` call, and runs
/// until `stop()` (or `deinit`).
///
/// ```swift
/// let source = RelayedPushSource(relay: IPv4Endpoint(host: link.namespaceAddress, port: 7001), token: token) { push in
///     record(push.index, push.receivedAtMs, push.deliveredAt)
/// }
/// let phone = SimulatedPhone(name: "callee0", userID: id, client: client, pushSource: source, pushToken: token)
/// ```
public final class RelayedPushSource: PushSource {
    /// Where it connects.
    public let relay: IPv4Endpoint
    /// The device token it asks for.
    public let token: String
    private let core: SourceCore

    /// Creates a source; it connects on `start()` or the first `pushes` call.
    ///
    /// - Parameters:
    ///   - reconnectDelay: the pause before reconnecting after a drop or a failed connect; it
    ///     doubles on each failed attempt, up to 2 s, and starts again once connected.
    ///   - connectTimeout: how long one connect may take (SYNs retransmit over a lossy link).
    ///   - onPush: called on the source's thread for each push as it is read, once per inbox
    ///     index; keep it short, and do not call `stop()` from it (stop joins that thread).
    public init(
        relay: IPv4Endpoint, token: String, reconnectDelay: Duration = .milliseconds(100), connectTimeout: Duration = .seconds(10),
        onPush: @escaping @Sendable (RelayedPush) -> Void = { _ in }
    ) {
        self.relay = relay
        self.token = token.lowercased()
        core = SourceCore(relay: relay, token: token.lowercased(), reconnectDelay: reconnectDelay, connectTimeout: connectTimeout, onPush: onPush)
    }

    deinit { core.stop() }

    /// Starts connecting; later calls do nothing. Throws `stopped` after `stop()`.
    public func start() throws(PushRelayError) { try core.start() }

    /// Closes the connection and joins the thread; waiting `pushes` calls return. Calling it
    /// again does nothing.
    public func stop() { core.stop() }

    /// Connections made so far (1 while the first holds; each reconnect adds one).
    public var connections: Int { core.snapshot.connections }
    /// Whether a connection is open now.
    public var isConnected: Bool { core.snapshot.connected }
    /// The highest inbox index received.
    public var lastIndex: Int { core.snapshot.lastIndex }

    /// The payloads received with an index above `after` (waiting up to `wait` seconds for the
    /// first), and the index to ask after next time.
    public func pushes(after: Int, wait: Double) async throws -> (payloads: [Data], cursor: Int) {
        try core.start()
        let deadline = ContinuousClock.now + .milliseconds(Int(max(wait, 0) * 1000))
        while true {
            try Task.checkCancellation()
            if let ready = core.take(after: after) { return ready }
            let left = deadline - ContinuousClock.now
            if left <= .zero { return ([], after) }
            if core.snapshot.stopped { throw PushRelayError(.stopped, "the push source for \(token) was stopped") }
            await core.waitForPush(after: after, for: left)
        }
    }
}

/// What a ``RelayedPushSource``'s thread and its callers share.
private final class SourceCore: Sendable {
    struct Snapshot {
        var connections = 0
        var connected = false
        var lastIndex = 0
        var stopped = false
    }

    private struct State {
        var snapshot = Snapshot()
        var thread: JoinableThread?
        var wake: WakePipe?
        var received: [(index: Int, payload: Data)] = []
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    let relay: IPv4Endpoint
    let token: String
    let reconnectDelay: Double
    let connectTimeout: Double
    let onPush: @Sendable (RelayedPush) -> Void
    private let state = Mutex(State())

    init(relay: IPv4Endpoint, token: String, reconnectDelay: Duration, connectTimeout: Duration, onPush: @escaping @Sendable (RelayedPush) -> Void) {
        self.relay = relay
        self.token = token
        self.reconnectDelay = Self.seconds(reconnectDelay)
        self.connectTimeout = Self.seconds(connectTimeout)
        self.onPush = onPush
    }

    var snapshot: Snapshot { state.withLock { $0.snapshot } }

    func start() throws(PushRelayError) {
        try state.withLock { state throws(PushRelayError) in
            if state.snapshot.stopped { throw PushRelayError(.stopped, "the push source for \(token) was stopped") }
            guard state.thread == nil else { return }
            let wake = try WakePipe()
            do throws(PushRelayError) {
                state.thread = try JoinableThread.relay(name: "sb-push-source") { [self] in run(wake: wake) }
                state.wake = wake
            } catch {
                wake.close()
                throw error
            }
        }
    }

    func stop() {
        let (thread, wake, waiters) = state.withLock { state in
            state.snapshot.stopped = true
            defer {
                state.thread = nil
                state.wake = nil
                state.waiters = [:]
            }
            return (state.thread, state.wake, Array(state.waiters.values))
        }
        wake?.ring()
        thread?.join()
        wake?.close()
        waiters.forEach { $0.resume() }
    }

    /// The payloads above `after` and the last index, dropping what is at or below `after`
    /// (the caller has it); `nil` when there is nothing new.
    func take(after: Int) -> (payloads: [Data], cursor: Int)? {
        state.withLock { state in
            state.received.removeAll { $0.index <= after }
            guard let last = state.received.last else { return nil }
            return (state.received.map(\.payload), last.index)
        }
    }

    /// Returns when a push above `after` arrives, after `duration`, on stop or on cancellation.
    func waitForPush(after: Int, for duration: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.snapshot.stopped || state.received.contains(where: { $0.index > after }) { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { return continuation.resume() }
                if Task.isCancelled { resume(id) }
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.seconds(duration)) { [self] in resume(id) }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    // MARK: The thread

    private func run(wake: WakePipe) {
        var delay = reconnectDelay
        while true {
            if let fd = try? RelaySocket.connect(to: relay, timeout: connectTimeout, wakeFD: wake.readFD) {
                let line = state.withLock { state in
                    state.snapshot.connections += 1
                    state.snapshot.connected = true
                    return PushRelayRequest(token: token, after: state.snapshot.lastIndex).line
                }
                delay = reconnectDelay
                if RelaySocket.sendAll(fd, Array(line.utf8), wakeFD: wake.readFD) { receive(from: fd, wake: wake) }
                close(fd)
                state.withLock { $0.snapshot.connected = false }
            } else {
                delay = min(delay * 2, max(2, reconnectDelay))
            }
            // Stop, or pause before the next attempt (the pause ends early on stop).
            var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            if snapshot.stopped || poll(&fds, 1, Int32((delay * 1000).rounded(.up))) > 0 { return }
        }
    }

    /// Reads frames until the connection ends, a frame is malformed, or the source stops.
    private func receive(from fd: Int32, wake: WakePipe) {
        var decoder = PushRelayFrame.Decoder()
        var scratch = [UInt8](repeating: 0, count: 16_384)
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            let count = read(fd, &scratch, scratch.count)
            if count == 0 { return }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return
            }
            decoder.append(scratch[0..<count])
            let now = Date()
            var pushes: [RelayedPush] = []
            do {
                while let body = try decoder.next() {
                    guard let push = PushRelayFrame.decode(body, deliveredAt: now) else { return }
                    pushes.append(push)
                }
            } catch {
                return
            }
            guard !pushes.isEmpty else { continue }
            let (fresh, waiters) = state.withLock { state in
                let fresh = pushes.filter { $0.index > state.snapshot.lastIndex }
                guard let last = fresh.last else { return ([RelayedPush](), [CheckedContinuation<Void, Never>]()) }
                state.snapshot.lastIndex = last.index
                state.received += fresh.map { ($0.index, $0.payload) }
                defer { state.waiters = [:] }
                return (fresh, Array(state.waiters.values))
            }
            // onPush first: whoever `pushes` wakes finds each push already reported.
            fresh.forEach(onPush)
            waiters.forEach { $0.resume() }
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

// MARK: Sockets and threads

/// Client sockets for the source (the relay listens and accepts with `TCPSocket`).
private enum RelaySocket {
    /// A non-blocking, close-on-exec TCP connection to `endpoint` with `TCP_NODELAY`, made
    /// within `timeout` seconds; gives up early when `wakeFD` becomes readable.
    static func connect(to endpoint: IPv4Endpoint, timeout: Double, wakeFD: Int32) throws(PushRelayError) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: endpoint.port).bigEndian
        guard inet_pton(AF_INET, endpoint.host, &address.sin_addr) == 1 else {
            throw PushRelayError(.systemCall, "'\(endpoint.host)' is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PushRelayError(.systemCall, "socket: \(describeErrno(errno))") }
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var failure = started == 0 ? 0 : errno
        if failure == EINPROGRESS || failure == EINTR {
            failure = ETIMEDOUT
            let deadline = monotonicSeconds() + timeout
            while true {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, 2, Int32((left * 1000).rounded(.up)))
                if ready < 0, errno == EINTR { continue }
                if fds[1].revents != 0 {
                    failure = ECANCELED
                    break
                }
                if fds[0].revents != 0 {
                    var code: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                    failure = code
                    break
                }
            }
        }
        guard failure == 0 else {
            close(fd)
            throw PushRelayError(.systemCall, "cannot connect to the push relay at \(endpoint): \(describeErrno(failure))")
        }
        TCPSocket.setNoDelay(fd)
        return fd
    }

    /// Writes all of `bytes`; `false` when the connection fails or `wakeFD` becomes readable.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8], wakeFD: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                offset += written
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EINTR else { return false }
            var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0, errno != EINTR { return false }
            if fds[1].revents != 0 { return false }
        }
        return true
    }
}

/// A pipe whose read end wakes a `poll`: non-blocking, close-on-exec.
private final class WakePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32
    private let closed = Atomic(false)

    init() throws(PushRelayError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PushRelayError(.systemCall, "pipe: \(describeErrno(errno))") }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = ends[0]
        writeFD = ends[1]
    }

    /// Makes the read end readable (a full pipe is readable already).
    func ring() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Empties the pipe, so the next `poll` waits for the next ring.
    func drain() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(readFD, &scratch, scratch.count) > 0 {}
    }

    /// Closes both ends; later calls do nothing. The owner makes sure nobody rings after.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(readFD)
        Glibc.close(writeFD)
    }
}

extension JoinableThread {
    /// Starts `body` on a thread named `name`; a failure to start is a ``PushRelayError``.
    fileprivate static func relay(name: String, _ body: @escaping @Sendable () -> Void) throws(PushRelayError) -> JoinableThread {
        do {
            return try JoinableThread(name: name, body)
        } catch {
            throw PushRelayError(.systemCall, error.description)
        }
    }
}
