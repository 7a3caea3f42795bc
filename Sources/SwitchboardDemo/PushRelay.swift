import Foundation
import Glibc
import Synchronization
import SwitchboardAPNsEmulator
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardPOSIX

/// A failure of the push relay or of a relayed push source. `code` is stable.
public typealias PushRelayError = CodedError<PushRelayErrorCode>

/// The kinds of ``PushRelayError``, as stable snake_case strings.
public enum PushRelayErrorCode: String, Sendable {
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

/// The APNs → phone leg over a real, long-lived TCP connection per phone, as APNs reaches a
/// real phone: the relay streams every push the in-process emulator accepts for a token to
/// the connection that asked for that token (the protocol is in PushRelayProtocol.swift).
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
            guard case .idle = state else {
                throw PushRelayError(.alreadyStarted, "a relay starts once; make a new one")
            }
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
final class RelayCounters: Sendable {
    struct Values {
        var accepted = 0
        var open = 0
        var relayed = 0
    }

    private let values = Mutex(Values())

    func withLock<T>(_ body: (inout Values) -> T) -> T { values.withLock { body(&$0) } }
}

/// What the relay's accepting thread and connection threads share.
final class RelayCore: Sendable {
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
        } catch  where error.call.hasPrefix("bind") {
            throw PushRelayError(
                .bindFailed, "the push relay cannot listen on \(listen): \(describeErrno(error.errno))")
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
        var fds = [
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
        ]
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
final class RelayConnection: Sendable {
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
                let written = pending[offset...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
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
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: core.wake.readFD, events: Int16(POLLIN), revents: 0),
            ]
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
            if line.last == UInt8(ascii: "\n") {
                return PushRelayRequest(line: String(decoding: line.dropLast(), as: UTF8.self))
            }
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
                let frames = messages.flatMap {
                    PushRelayFrame.encode(index: $0.index, receivedAtMs: $0.receivedAt, payload: $0.payload)
                }
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
