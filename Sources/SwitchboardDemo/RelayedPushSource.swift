import Foundation
import Glibc
import Synchronization
import SwitchboardAPNsEmulator
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardPOSIX

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
        relay: IPv4Endpoint, token: String, reconnectDelay: Duration = .milliseconds(100),
        connectTimeout: Duration = .seconds(10),
        onPush: @escaping @Sendable (RelayedPush) -> Void = { _ in }
    ) {
        self.relay = relay
        self.token = token.lowercased()
        core = SourceCore(
            relay: relay, token: token.lowercased(), reconnectDelay: reconnectDelay, connectTimeout: connectTimeout,
            onPush: onPush)
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
final class SourceCore: Sendable {
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

    init(
        relay: IPv4Endpoint, token: String, reconnectDelay: Duration, connectTimeout: Duration,
        onPush: @escaping @Sendable (RelayedPush) -> Void
    ) {
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
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
            ]
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
