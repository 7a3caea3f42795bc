import CLinux
import Foundation
import Glibc
import Synchronization
import SwitchboardPOSIX

/// One epoll loop on its own thread: accepts on its own `SO_REUSEPORT` socket, reads and parses
/// requests, starts handler tasks, and writes whatever tasks hand back through its inbox.
///
/// Loop-thread state (`connections`, `listenFD` after start, the scratch buffer, the run queue)
/// is touched only on the loop's thread. Other threads call only `enqueue` (bytes or jobs),
/// `requestDrain` and `requestStop`, which go through the `Mutex`-guarded inbox and the eventfd.
/// The loop is also its handlers' task executor (`EventLoop+Executor.swift`). Accepting lives in
/// `EventLoop+Accepting.swift`; the state it shares with the loop is internal, not private, for it.
// @unchecked Sendable: every stored `var` below (`connections`, `runQueue`, `localOutbound`,
// `listenFD`, the backoffs, the flags) is confined to the loop thread. It is set before the
// thread starts, or inside `run()` and the methods it calls, or by `enqueue` (bytes or a job)
// only in its `isLoopThread` branch, which runs on that thread by definition; `handOverJobs()`
// runs on it too, as `run()`'s last step, and clears `loopThread` before anything else can see
// the queues. What other threads touch is `inbox` (a Mutex), `loopThread`, `sleeping` and
// `finished` (Atomics and a Mutex), `wakeFD` (an eventfd, whose writes are thread-safe) and the
// `let` properties, which never change.
final class EventLoop: @unchecked Sendable {
    enum Control: Sendable {
        case drain
        case stop
    }

    let index: Int
    let server: ServerShared
    let descriptors: (limit: Int, reserve: Int)
    let epollFD: Int32
    private let wakeFD: Int32
    var listenFD: Int32
    /// What other threads hand the loop. `closed` once the loop has ended: from then on jobs go
    /// to the global executor instead (see `EventLoop+Executor.swift`).
    let inbox = Mutex<(outbound: [Outbound], control: [Control], jobs: [UnownedJob], closed: Bool)>(([], [], [], false))
    /// Jobs of tasks that prefer this loop as their executor (request handlers), to run on
    /// the loop thread after the current batch of events.
    var runQueue: [UnownedJob] = []
    /// Responses handed over by tasks running on the loop thread itself: delivered right after
    /// the jobs ran, without the inbox or the eventfd.
    var localOutbound: [Outbound] = []
    /// `pthread_self()` of the loop thread while it runs (0 before and after).
    let loopThread = Atomic<UInt>(0)
    /// True while the loop is in (or about to enter) `epoll_wait`: only then does a hand-over
    /// write the eventfd. A busy loop looks at the inbox before it sleeps again, so a burst of
    /// hand-overs (5,000 waiters woken by one commit) costs no syscall each and reaches the
    /// loop in batches.
    let sleeping = Atomic<Bool>(false)
    var connections: [Int32: Connection] = [:]
    var nextConnectionID: UInt64 = 0
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    var draining = false
    private var stopping = false
    private var nextSweep: UInt64 = 0
    /// Accepting stops for a while after a failure that would repeat at once (out of
    /// descriptors): the listening socket is level-triggered, so it stays readable.
    var acceptBackoff = FailureBackoff()
    /// `epoll_wait` itself failing: the loop waits before it polls again.
    private var pollBackoff = FailureBackoff()
    private let finished = Mutex(false)

    /// `descriptors`: the process's descriptor limit and how many of them connections leave free.
    init(index: Int, listenFD: Int32, server: ServerShared, descriptors: (limit: Int, reserve: Int)) throws {
        self.index = index
        self.descriptors = descriptors
        self.listenFD = listenFD
        self.server = server
        epollFD = try systemCall("epoll_create1") { switchboard_epoll_create() }
        wakeFD = try systemCall("eventfd") { switchboard_eventfd() }
        try register(wakeFD, events: switchboard_epollin())
        try register(listenFD, events: switchboard_epollin())
    }

    deinit {
        scratch.deallocate()
        close(epollFD)
        close(wakeFD)
    }

    var isFinished: Bool { finished.withLock { $0 } }

    // MARK: Cross-thread entry points

    /// Hands bytes to the loop; wakes it only when it sleeps. On the loop thread (a handler
    /// running on this loop's executor) it only queues them for after the jobs.
    func enqueue(_ outbound: Outbound) {
        if isLoopThread {
            localOutbound.append(outbound)
            return
        }
        let closed = inbox.withLock { inbox in
            if inbox.closed { return true }
            inbox.outbound.append(outbound)
            return false
        }
        // The loop has ended: nobody will deliver it, so whoever waits on it learns now.
        if closed {
            outbound.connectionWentAway()
            return
        }
        wakeIfSleeping()
    }

    /// After a hand-over: wakes the loop if it sleeps (once per sleep). The loop marks itself
    /// sleeping before its last look at the inbox, so a hand-over either is seen by that look or
    /// finds the mark (both orders are sequentially consistent).
    func wakeIfSleeping() {
        if sleeping.exchange(false, ordering: .sequentiallyConsistent) { wake() }
    }

    /// Stop accepting, close idle connections, let requests in flight finish.
    func requestDrain() { control(.drain) }

    /// Cancel everything and close every connection.
    func requestStop() { control(.stop) }

    private func control(_ message: Control) {
        inbox.withLock { $0.control.append(message) }
        wake()
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: The loop

    func run() {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        nameCurrentThread("sb-http-loop-\(index)")
        let maxEvents = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: maxEvents)
        defer { events.deallocate() }
        while !(stopping || (draining && connections.isEmpty)) {
            if acceptBackoff.resumeIfDue(now: monotonicNanoseconds()) { resumeAccepting() }
            // Hand-overs that came while the loop was busy did not wake it: look before sleeping.
            sleeping.store(true, ordering: .sequentiallyConsistent)
            let handedOver = inbox.withLock { !$0.outbound.isEmpty || !$0.control.isEmpty || !$0.jobs.isEmpty }
            // Jobs still queued (a batch cut short) or handed over: look at the sockets without waiting.
            let timeout =
                runQueue.isEmpty && !handedOver
                ? acceptBackoff.timeout(now: monotonicNanoseconds(), atMost: draining ? 50 : 1000) : 0
            let count = server.configuration.pollCall(epollFD, events, Int32(maxEvents), timeout)
            sleeping.store(false, ordering: .sequentiallyConsistent)
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                // Never a reason to stop serving, nor to poll again at once: wait, then look at
                // the inbox (a stop request must still get through) and poll again.
                let pause = pollBackoff.failed(now: monotonicNanoseconds())
                server.report(
                    HTTPTransportProblem(operation: .poll, cause: .error(code), pause: .nanoseconds(Int64(pause))))
                var delay = timespec(tv_sec: Int(pause / 1_000_000_000), tv_nsec: Int(pause % 1_000_000_000))
                var left = timespec()
                while nanosleep(&delay, &left) != 0 && errno == EINTR { delay = left }
                _ = pollBackoff.resumeIfDue(now: monotonicNanoseconds())
                drainInbox()
                continue
            }
            pollBackoff.recovered()
            for slot in 0..<Int(count) {
                let fd = Int32(truncatingIfNeeded: switchboard_epoll_data(events + slot))
                let flags = switchboard_epoll_events(events + slot)
                if fd == wakeFD {
                    var counter: UInt64 = 0
                    _ = read(wakeFD, &counter, 8)
                } else if fd == listenFD {
                    acceptConnections()
                } else if let connection = connections[fd] {
                    handleEvents(flags, on: connection)
                }
            }
            takeInbox()
            runJobs()
            let now = monotonicNanoseconds()
            if now >= nextSweep {
                sweep(now: now)
                nextSweep = now + 1_000_000_000
                // What the sweep's ticks wrote (pings, closes) goes out now, not a wake-up later.
                deliverLocalOutbound()
            }
        }
        for connection in Array(connections.values) { closeConnection(connection) }
        if listenFD >= 0 {
            close(listenFD)
            listenFD = -1
        }
        handOverJobs()
        finished.withLock { $0 = true }
    }

    /// Reads the eventfd's count and takes what other threads handed over.
    private func drainInbox() {
        var counter: UInt64 = 0
        _ = read(wakeFD, &counter, 8)
        takeInbox()
    }

    /// Takes what other threads handed over: responses, control messages, jobs.
    private func takeInbox() {
        let (outbound, control, jobs) = inbox.withLock { inbox in
            defer { (inbox.outbound, inbox.control, inbox.jobs) = ([], [], []) }
            return (inbox.outbound, inbox.control, inbox.jobs)
        }
        runQueue.append(contentsOf: jobs)
        for message in control {
            switch message {
            case .drain: beginDrain()
            case .stop: stopping = true
            }
        }
        for item in outbound { deliver(item) }
    }

    // MARK: Reading

    private func handleEvents(_ flags: UInt32, on connection: Connection) {
        if flags & switchboard_epollerr() != 0 {
            closeConnection(connection)
            return
        }
        if flags & switchboard_epollout() != 0 {
            flush(connection)
            if connections[connection.fd] !== connection { return }
        }
        if flags & (switchboard_epollin() | switchboard_epollrdhup() | switchboard_epollhup()) != 0 {
            readAvailable(from: connection)
        }
    }

    private func readAvailable(from connection: Connection) {
        var received = false
        for _ in 0..<4 {
            let count = read(connection.fd, scratch.baseAddress, scratch.count)
            if count > 0 {
                if connection.phase == .lingering {
                    // Answered and closing: what still arrives is dropped, up to a budget (a
                    // body sent after its refusal is not worth reading in full).
                    connection.lingerBytesLeft -= count
                    if connection.lingerBytesLeft <= 0 {
                        closeConnection(connection)
                        return
                    }
                    if count < scratch.count { return }
                    continue
                }
                let bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<count])
                if let takeover = connection.takeover {
                    // Taken over: the bytes go straight to the handler (once it is closing,
                    // nowhere); the HTTP parser is done with this connection.
                    if connection.phase == .takenOver {
                        takeover.handler.connectionReceived(bytes)
                        if connections[connection.fd] !== connection { return }
                        // A peer that sends faster than it reads (pings it never reads the
                        // pongs of) is not read until its output drains.
                        if connection.pendingOutput > StreamChannel.highWater {
                            setInterest(connection, connection.interest & ~switchboard_epollin())
                            return
                        }
                    }
                    if count < scratch.count { return }
                    continue
                }
                connection.parser.append(bytes)
                received = true
                if count < scratch.count { break }
            } else if count == 0 {
                // The peer closed its side: a held handler is cancelled and its reply dropped.
                closeConnection(connection)
                return
            } else {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                closeConnection(connection)
                return
            }
        }
        guard received else { return }
        if connection.phase == .reading {
            processInput(connection)
        } else if connection.parser.bufferedByteCount > server.configuration.limits.maxHeaderBytes + 65536 {
            // A pipelining client ran ahead of its responses: stop reading until it catches up;
            // RDHUP still reports a disconnect.
            setInterest(connection, connection.interest & ~switchboard_epollin())
        }
    }

    /// Parses buffered bytes and starts the next request, one at a time per connection.
    func processInput(_ connection: Connection) {
        while connection.phase == .reading {
            if connection.pendingOutput > StreamChannel.highWater { return }
            switch connection.parser.next() {
            case .needMoreData:
                let now = monotonicNanoseconds()
                if connection.parser.isReadingBody {
                    if connection.bodyDeadline == 0 { connection.bodyDeadline = now + server.bodyTimeout }
                } else if connection.parser.hasPartialRequest {
                    if connection.headerDeadline == 0 { connection.headerDeadline = now + server.headerTimeout }
                    connection.idleDeadline = 0
                } else if connection.headerDeadline == 0, connection.idleDeadline == 0 {
                    connection.idleDeadline = now + server.idleTimeout
                    connection.parser.releaseMemoryIfIdle()
                }
                if connection.interest & switchboard_epollin() == 0 {
                    setInterest(connection, connection.interest | switchboard_epollin())
                }
                return
            case .headReceived(let head):
                connection.headerDeadline = 0
                connection.idleDeadline = 0
                connection.bodyDeadline = monotonicNanoseconds() + server.bodyTimeout
                let limit: Int
                switch server.configuration.admitBody(head) {
                case .refuse(let response):
                    // No route takes it: answered before a byte of its body is kept.
                    finishEarly(connection, response, for: head)
                    return
                case .accept(let maxBodyBytes):
                    limit = min(maxBodyBytes, server.configuration.limits.maxBodyBytes)
                }
                connection.parser.bodyLimit = limit
                var announced = limit
                if case .length(let length) = head.framing { announced = length }
                if announced <= limit {
                    guard server.reserveBody(announced) else {
                        let busy = server.errorResponse(
                            status: 503, code: "SERVER_BUSY",
                            message: "too many request bodies are arriving at once; try again")
                        finishEarly(connection, busy, for: head)
                        return
                    }
                    connection.reservedBodyBytes = announced
                }
                if head.expectsContinue, connection.parser.bufferedByteCount == 0 {
                    connection.queue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                    flush(connection)
                    if connections[connection.fd] !== connection { return }
                }
            case .request(let head, let body):
                server.releaseBody(connection.reservedBodyBytes)
                connection.reservedBodyBytes = 0
                connection.headerDeadline = 0
                connection.bodyDeadline = 0
                connection.idleDeadline = 0
                if draining {
                    // A request that arrives after shutdown began is refused politely.
                    let refusal = server.errorResponse(
                        status: 503, code: "SHUTTING_DOWN", message: "server is shutting down")
                    connection.queue(
                        ResponseEncoder.fixed(refusal, bytes: refusal.bodyBytes, for: head, keepAlive: false))
                    connection.phase = .closingAfterFlush
                    flush(connection)
                    return
                }
                connection.phase = .handling
                // A held request (a long poll) should cost little: drop the consumed bytes now.
                connection.parser.releaseMemoryIfIdle()
                startHandler(
                    HTTPRequest(head: head, body: body, remoteAddress: connection.remoteAddress), on: connection)
            case .failed(let error):
                if error == .bodyTooLarge { connection.lingerAfterFlush = true }
                server.releaseBody(connection.reservedBodyBytes)
                connection.reservedBodyBytes = 0
                let response = server.errorResponse(status: error.status, code: error.code, message: error.message)
                connection.queue(ResponseEncoder.fixed(response, bytes: response.bodyBytes, for: nil, keepAlive: false))
                connection.phase = .closingAfterFlush
                flush(connection)
                return
            }
        }
    }

    /// Answers `response` before the request's body was read, and closes after it is written.
    private func finishEarly(_ connection: Connection, _ response: HTTPResponse, for head: HTTPRequestHead) {
        connection.bodyDeadline = 0
        connection.lingerAfterFlush = true
        connection.queue(ResponseEncoder.fixed(response, bytes: response.bodyBytes, for: head, keepAlive: false))
        connection.phase = .closingAfterFlush
        flush(connection)
    }

    private func startHandler(_ request: HTTPRequest, on connection: Connection) {
        let fd = connection.fd, id = connection.id
        let server = self.server
        // On this loop's own executor: the handler runs on the loop thread until it waits for
        // something (the database, a lock-free hand-off), and its answer is written without a
        // thread hop. Work that takes long (scrypt) runs on queues of its own.
        // A large body (decoding it may take milliseconds) starts on the shared pool, so the
        // loop's other connections never wait for it.
        let executor: any TaskExecutor =
            request.body.count > server.configuration.offloadBodyBytes ? globalConcurrentExecutor : self
        connection.task = Task(executorPreference: executor) { [self] in
            let response = await server.handler(request)
            await self.respond(response, to: request.head, fd: fd, connectionID: id)
        }
    }

    /// Runs on the handler's task: encodes the response and hands it to the loop.
    private func respond(_ response: HTTPResponse, to head: HTTPRequestHead, fd: Int32, connectionID: UInt64) async {
        let keepAlive = head.keepAlive && !server.isDraining
        switch response.body {
        case .bytes(let bytes):
            let output = ResponseEncoder.fixed(response, bytes: bytes, for: head, keepAlive: keepAlive)
            enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: output, then: keepAlive ? .keepAlive : .close))
        case .takeOver(let handler):
            let headBytes = ResponseEncoder.head(
                status: 101, headers: response.headers, version: head.version,
                keepAlive: true, contentLength: nil, chunked: false)
            let channel = TakeoverChannel(loop: self, fd: fd, connectionID: connectionID)
            enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: headBytes, then: .takeOver(handler, channel)))
        case .stream(let produce):
            let chunked = head.version == .http1_1
            let streamKeepAlive = keepAlive && chunked
            let headBytes = ResponseEncoder.head(
                status: response.status, headers: response.headers, version: head.version,
                keepAlive: streamKeepAlive, contentLength: nil, chunked: chunked)
            if head.method == "HEAD" {
                enqueue(
                    Outbound(
                        fd: fd, connectionID: connectionID, bytes: headBytes,
                        then: streamKeepAlive ? .keepAlive : .close))
                return
            }
            let channel = StreamChannel(loop: self, fd: fd, connectionID: connectionID, chunked: chunked)
            enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: headBytes, then: .startStream(channel)))
            do {
                try await produce(HTTPStreamWriter(channel: channel))
                let trailer: [UInt8] = chunked ? Array("0\r\n\r\n".utf8) : []
                enqueue(
                    Outbound(
                        fd: fd, connectionID: connectionID, bytes: trailer, then: streamKeepAlive ? .keepAlive : .close)
                )
            } catch {
                enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: [], then: .abort))
            }
        }
    }
}
