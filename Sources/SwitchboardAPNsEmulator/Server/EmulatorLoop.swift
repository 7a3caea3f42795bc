import Glibc
import Synchronization
import SwitchboardPOSIX

/// The emulator's event loop: one dedicated thread polling the listener, a wake pipe and every
/// connection, firing delayed answers and long-poll deadlines from one timer list.
///
/// Everything but ``requestStop()`` and ``waitUntilFinished()`` runs on the loop thread.
// @unchecked Sendable: every stored `var` (connections, timers, waiters, router, ids) is touched
// only inside `run()` and the methods it calls, on the one loop thread; the thread is started
// after `init` returns and nothing else calls those methods. The only cross-thread state is
// `control` (a Mutex) and the wake pipe's write end (a write(2) on a pipe is thread-safe).
final class EmulatorLoop: @unchecked Sendable {
    /// A response held back by a `delay` fault.
    private struct DelayedAnswer {
        var deadline: UInt64
        var connectionID: UInt64
        var streamID: Int32
        var response: EmulatorResponse
        var delivery: EmulatorRouter.Delivery?
        var token: Substring
    }

    /// A held `GET /inbox/<token>` long poll.
    private struct Waiter {
        var deadline: UInt64
        var connectionID: UInt64
        var streamID: Int32
        var token: String
        var after: Int
    }

    private struct Control {
        var stopRequested = false
        var finished = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let listenFD: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let shared: EmulatorShared
    private var router: EmulatorRouter
    private let makeTransport: (Int32) throws -> any ConnectionTransport
    private let maxConcurrentStreams: UInt32
    private let bodyLimit: Int
    private let log: (@Sendable (String) -> Void)?
    private let control = Mutex(Control())

    private var connections: [UInt64: EmulatorConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var delayed: [DelayedAnswer] = []
    private var waiters: [Waiter] = []
    /// Connections that may have output to write after this iteration.
    private var dirty: Set<UInt64> = []
    /// Connections with input buffered above the socket, to read again without waiting.
    private var rereads: Set<UInt64> = []
    /// After `accept` failed for lack of descriptors or memory, the listening socket is not
    /// watched until then (monotonic nanoseconds): it stays readable, and watching it would
    /// spin. The pause doubles from 100 ms to 1 s while the failures go on.
    private var acceptPausedUntil: UInt64?
    private var acceptPause: UInt64 = 100_000_000
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(
        listenFD: Int32, shared: EmulatorShared, router: EmulatorRouter, maxConcurrentStreams: UInt32,
        bodyLimit: Int, log: (@Sendable (String) -> Void)?,
        makeTransport: @escaping (Int32) throws -> any ConnectionTransport
    ) throws(APNsEmulatorSystemError) {
        var fds: [Int32] = [0, 0]
        try systemCall("pipe") { pipe(&fds) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        do {
            try TCPSocket.configure(wakeRead)
            try TCPSocket.configure(wakeWrite)
        } catch {
            close(wakeRead)
            close(wakeWrite)
            throw error
        }
        self.listenFD = listenFD
        self.shared = shared
        self.router = router
        self.maxConcurrentStreams = maxConcurrentStreams
        self.bodyLimit = bodyLimit
        self.log = log
        self.makeTransport = makeTransport
    }

    deinit {
        scratch.deallocate()
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: Cross-thread entry points

    /// Asks the loop to close everything and return from `run()`.
    func requestStop() {
        control.withLock { $0.stopRequested = true }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Returns once `run()` has returned.
    func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = control.withLock { control in
                if control.finished { return true }
                control.waiting.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    // MARK: The loop

    func run() {
        var pollFDs: [pollfd] = []
        var polled: [EmulatorConnection] = []
        while !control.withLock({ $0.stopRequested }) {
            pollFDs.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            pollFDs.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            if let until = acceptPausedUntil, monotonicNanoseconds() >= until { acceptPausedUntil = nil }
            pollFDs.append(pollfd(fd: listenFD, events: acceptPausedUntil == nil ? Int16(POLLIN) : 0, revents: 0))
            for connection in connections.values {
                guard let fd = connection.transport.pollDescriptor else { continue }
                let writable = connection.wantsWritable && connection.lingerDeadline == nil
                let events = Int16(POLLIN) | (writable ? Int16(POLLOUT) : 0)
                pollFDs.append(pollfd(fd: fd, events: events, revents: 0))
                polled.append(connection)
            }
            let count = poll(&pollFDs, nfds_t(pollFDs.count), rereads.isEmpty ? pollTimeout() : 0)
            if count < 0 {
                if errno == EINTR { continue }
                logEvent("poll failed", error: String(cString: strerror(errno)))
                break
            }
            if pollFDs[0].revents != 0 { drainWakePipe() }
            if pollFDs[1].revents != 0 { acceptConnections() }
            for (index, connection) in polled.enumerated() {
                let revents = pollFDs[index + 2].revents
                guard revents != 0, connections[connection.id] != nil else { continue }
                // A TLS handshake blocked on writing resumes through a read as well.
                let resumesTLS = revents & Int16(POLLOUT) != 0 && connection.transport.wantsWritable
                if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || resumesTLS {
                    readAvailable(connection)
                }
                dirty.insert(connection.id)
            }
            for id in rereads {
                rereads.remove(id)
                if let connection = connections[id] {
                    readAvailable(connection)
                    dirty.insert(id)
                }
            }
            fireTimers()
            flushDirty()
        }
        for connection in Array(connections.values) { closeConnection(connection, reason: nil) }
        close(listenFD)
        let waiting = control.withLock { control in
            control.finished = true
            defer { control.waiting.removeAll() }
            return control.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Milliseconds until the next delayed answer or long-poll deadline, at most one second.
    private func pollTimeout() -> Int32 {
        let next = min(
            delayed.lazy.map(\.deadline).min() ?? .max, waiters.lazy.map(\.deadline).min() ?? .max,
            connections.values.lazy.compactMap(\.lingerDeadline).min() ?? .max, acceptPausedUntil ?? .max)
        guard next != .max else { return 1000 }
        let now = monotonicNanoseconds()
        guard next > now else { return 0 }
        return Int32(min(1000, (next - now + 999_999) / 1_000_000))
    }

    private func drainWakePipe() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    private func acceptConnections() {
        for _ in 0..<64 {
            let fd: Int32
            do {
                guard let accepted = try TCPSocket.accept(listenFD) else { return }
                fd = accepted
                acceptPause = 100_000_000
            } catch {
                if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errno) {
                    // Logged once per pause, not once per wake-up.
                    acceptPausedUntil = monotonicNanoseconds() + acceptPause
                    logEvent("accept paused", error: "\(error.description); retrying in \(acceptPause / 1_000_000) ms")
                    acceptPause = min(acceptPause * 2, 1_000_000_000)
                } else {
                    logEvent("accept failed", error: error.description)
                }
                return
            }
            let transport: any ConnectionTransport
            do {
                transport = try makeTransport(fd)
            } catch {
                close(fd)
                logEvent("connection setup failed", error: "\(error)")
                continue
            }
            // From here the transport owns the socket and closes it when released.
            do {
                let connection = try EmulatorConnection(
                    id: nextConnectionID, transport: transport, maxConcurrentStreams: maxConcurrentStreams,
                    bodyLimit: bodyLimit)
                nextConnectionID += 1
                connections[connection.id] = connection
                dirty.insert(connection.id)
                shared.state.withLock { state in
                    state.stats.connectionsAccepted += 1
                    state.stats.connectionsOpen += 1
                }
            } catch {
                logEvent("connection setup failed", error: error.description)
            }
        }
    }

    private func readAvailable(_ connection: EmulatorConnection) {
        if connection.lingerDeadline != nil {
            discardInput(connection)
            return
        }
        defer {
            if connections[connection.id] != nil, connection.transport.hasBufferedInput {
                rereads.insert(connection.id)
            }
        }
        for _ in 0..<16 {
            switch connection.transport.read(into: scratch) {
            case .transferred(let count):
                do {
                    try connection.receive(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
                } catch {
                    // A protocol error: nghttp2 has queued GOAWAY; send it and stop listening.
                    _ = try? connection.flush()
                    countFrames(connection)
                    logEvent("protocol error", connection: connection.id, error: error.message)
                    linger(connection)
                    return
                }
                processCompletedStreams(connection)
                countFrames(connection)
            case .wouldBlock:
                return
            case .closed:
                closeConnection(connection, reason: nil)
                return
            case .failed(let message):
                closeConnection(connection, reason: message)
                return
            }
        }
    }

    private func processCompletedStreams(_ connection: EmulatorConnection) {
        for streamID in connection.takeCompletedStreams() {
            guard !connection.isBeyondGoaway(streamID), let request = connection.request(streamID) else { continue }
            shared.state.withLock { $0.stats.streams += 1 }
            if EmulatorRouter.isPush(request) { connection.pushStreams += 1 }
            let decision = router.route(request, pushStreamsOnConnection: connection.pushStreams)
            do {
                try perform(decision.action, on: connection, streamID: streamID, request: request)
                if let reason = decision.goawayReason {
                    try connection.goaway(lastStreamID: streamID, reason: reason)
                    shared.state.withLock { $0.stats.goawaysSent += 1 }
                    logEvent("goaway", connection: connection.id, stream: streamID, error: reason)
                }
            } catch {
                closeConnection(connection, reason: error.description)
                return
            }
        }
    }

    private func perform(
        _ action: EmulatorRouter.Action, on connection: EmulatorConnection, streamID: Int32, request: EmulatorRequest
    ) throws(NGHTTP2Error) {
        let token = request.pathWithoutQuery.dropFirst(PushValidator.pathPrefix.count)
        switch action {
        case .respond(let response, let delivery):
            try send(response, delivery: delivery, on: connection, streamID: streamID, token: token)
        case .respondLater(let response, let delivery, let milliseconds):
            let deadline = monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
            delayed.append(
                DelayedAnswer(
                    deadline: deadline, connectionID: connection.id, streamID: streamID, response: response,
                    delivery: delivery, token: token))
        case .refuse:
            try connection.refuse(streamID)
            logEvent("refused stream", connection: connection.id, stream: streamID)
        case .waitForInbox(let token, let after, let seconds):
            let deadline = monotonicNanoseconds() + UInt64(seconds) * 1_000_000_000
            waiters.append(
                Waiter(deadline: deadline, connectionID: connection.id, streamID: streamID, token: token, after: after))
            updateWaiterCount()
        }
    }

    /// Submits `response`, records it, and wakes long polls on the token whose inbox grew.
    private func send(
        _ response: EmulatorResponse, delivery: EmulatorRouter.Delivery?, on connection: EmulatorConnection,
        streamID: Int32, token: Substring
    ) throws(NGHTTP2Error) {
        try connection.respond(streamID, response)
        dirty.insert(connection.id)
        if let log, response.isPushAnswer { log(Self.logLine(response, token: token, connection: connection.id)) }
        if let token = router.sent(response, delivery: delivery) {
            wakeWaiters(token: token)
            shared.inboxWaiters.ring(token: token)
        }
    }

    private func wakeWaiters(token: String) {
        var remaining: [Waiter] = []
        for waiter in waiters {
            guard waiter.token == token, router.inboxHasNews(token: token, after: waiter.after) else {
                remaining.append(waiter)
                continue
            }
            answer(waiter)
        }
        waiters = remaining
        updateWaiterCount()
    }

    private func answer(_ waiter: Waiter) {
        guard let connection = connections[waiter.connectionID], connection.isOpen(waiter.streamID) else { return }
        do {
            try connection.respond(waiter.streamID, router.inboxResponse(token: waiter.token, after: waiter.after))
            dirty.insert(connection.id)
        } catch {
            closeConnection(connection, reason: error.description)
        }
    }

    private func fireTimers() {
        let now = monotonicNanoseconds()
        for connection in connections.values where (connection.lingerDeadline ?? .max) <= now {
            closeConnection(connection, reason: nil)
        }
        if delayed.contains(where: { $0.deadline <= now }) {
            let due = delayed.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            delayed.removeAll { $0.deadline <= now }
            for answer in due {
                guard let connection = connections[answer.connectionID], connection.isOpen(answer.streamID) else {
                    router.abandoned()
                    continue
                }
                do {
                    try send(
                        answer.response, delivery: answer.delivery, on: connection, streamID: answer.streamID,
                        token: answer.token)
                } catch {
                    closeConnection(connection, reason: error.description)
                }
            }
        }
        if waiters.contains(where: { $0.deadline <= now }) {
            let due = waiters.filter { $0.deadline <= now }
            waiters.removeAll { $0.deadline <= now }
            for waiter in due { answer(waiter) }
            updateWaiterCount()
        }
    }

    private func flushDirty() {
        for id in dirty {
            guard let connection = connections[id], connection.lingerDeadline == nil else { continue }
            do {
                guard try connection.flush() else {
                    closeConnection(connection, reason: nil)
                    continue
                }
            } catch {
                closeConnection(connection, reason: error.description)
                continue
            }
            countFrames(connection)
            if connection.isFinished { linger(connection) }
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// Half-closes a finished connection and reads (discarding) until the peer closes or two
    /// seconds pass.
    private func linger(_ connection: EmulatorConnection) {
        guard connection.lingerDeadline == nil else { return }
        connection.lingerDeadline = monotonicNanoseconds() + 2_000_000_000
        connection.transport.shutdownWrite()
        discardInput(connection)
    }

    private func discardInput(_ connection: EmulatorConnection) {
        for _ in 0..<16 {
            switch connection.transport.read(into: scratch) {
            case .transferred: continue
            case .wouldBlock: return
            case .closed, .failed:
                closeConnection(connection, reason: nil)
                return
            }
        }
    }

    /// Moves the connection's RST_STREAM and GOAWAY counts into the statistics.
    private func countFrames(_ connection: EmulatorConnection) {
        let counts = connection.takeFrameCounts()
        guard counts.resetsReceived > 0 || counts.goawaysSent > 0 else { return }
        shared.state.withLock { state in
            state.stats.resetsReceived += counts.resetsReceived
            state.stats.goawaysSentTotal += counts.goawaysSent
        }
    }

    private func closeConnection(_ connection: EmulatorConnection, reason: String?) {
        countFrames(connection)
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        connection.transport.close()
        let before = waiters.count
        waiters.removeAll { $0.connectionID == connection.id }
        if waiters.count != before { updateWaiterCount() }
        shared.state.withLock { $0.stats.connectionsOpen -= 1 }
        if let reason { logEvent("connection closed", connection: connection.id, error: reason) }
    }

    /// Logs `{"msg":…,"connection":…,"stream":…,"error":…}` (members present when given).
    private func logEvent(_ message: String, connection: UInt64? = nil, stream: Int32? = nil, error: String? = nil) {
        guard let log else { return }
        var json = JSONWriter()
        json.beginObject()
        json.member("msg", message)
        if let connection { json.member("connection", connection) }
        if let stream { json.member("stream", stream) }
        if let error { json.member("error", error) }
        json.endObject()
        log(json.text)
    }

    private func updateWaiterCount() {
        let count = waiters.count
        shared.state.withLock { $0.stats.longPollsWaiting = count }
    }

    /// `{"msg":"push","status":…,"reason":…,"token":"…<last 8>","apnsId":…}` (tokens are
    /// logged only as a short suffix).
    private static func logLine(_ response: EmulatorResponse, token: Substring, connection: UInt64) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.member("msg", "push")
        json.member("connection", connection)
        json.member("status", response.status)
        if let reason = response.reason { json.member("reason", reason) }
        json.member("token", "…" + token.suffix(8))
        if let apnsID = response.headers.first(where: { $0.name == "apns-id" })?.value { json.member("apnsId", apnsID) }
        json.endObject()
        return json.text
    }
}
