import CH2ResetFilter
import Foundation
import Synchronization
import SwitchboardLifecycle

/// An HTTP/2 client for APNs-style traffic: few long-lived connections, many multiplexed streams, a deadline on
/// every request, and a reconnect backoff that never turns into a tight loop.
///
/// libcurl (with nghttp2) does the protocol work; one `CURLM*` multi handle runs on one dedicated thread (not the
/// Swift cooperative pool). Requests reach it through a `Mutex`-guarded inbox and a `curl_multi_wakeup`.
///
/// ```swift
/// let client = try HTTP2Client(configuration: .init(baseURL: "https://api.push.apple.com"))
/// let response = try await client.send(HTTP2Request(path: "/3/device/\(token)", headers: headers, body: payload))
/// print(response.status, response.headerValue("apns-id") ?? "-")
/// await client.shutdown()
/// ```
///
/// After a connection-level failure (connect refused, TLS failure, connection lost, GOAWAY under a request) new
/// connection attempts wait `reconnectInitialDelay`, doubling up to `reconnectMaximumDelay`, and only one
/// request probes the connection; the others wait (within their deadlines). The delay resets when a response
/// arrives. A request sent within a push attempt's ``RequestWindow`` is not sent once it has waited so: it is
/// handed back (``HTTP2ClientError/heldForConnection``) when the connection returns.
///
/// Creating the client starts nothing: its loop thread starts with the first request (or with
/// `run()`, when the client runs as a service), and connections open as requests need them.
public final class HTTP2Client: Service, Sendable {
    /// The configuration the client was created with.
    public let configuration: HTTP2ClientConfiguration
    private let storage: HTTP2ClientStorage
    /// The loop thread until it is started (then nil).
    private let unstarted: Mutex<Thread?>
    /// Set once the thread was started: every later send skips the lock.
    private let started = Atomic<Bool>(false)

    /// Creates the client; connections open lazily on the first request.
    ///
    /// Throws ``HTTP2ClientError/invalidConfiguration(_:)`` for values that cannot work.
    public init(configuration: HTTP2ClientConfiguration) throws(HTTP2ClientError) {
        let baseURL = try configuration.validatedBaseURL()
        try CurlGlobal.ensureInitialized()
        let multi = try CurlMultiHandle(configuration: configuration)
        let storage = HTTP2ClientStorage(wakeTarget: CurlWakeTarget(multi: multi.raw))
        self.configuration = configuration
        self.storage = storage
        let handOff = LoopHandOff(
            HTTP2ClientLoop(configuration: configuration, baseURL: baseURL, multi: multi, storage: storage))
        let thread = Thread {
            handOff.take().run()  // the loop, and with it the multi handle, is released when run() returns
            storage.loopDidExit()
        }
        thread.name = "sb-push-h2"
        unstarted = Mutex(thread)
    }

    /// Starts the loop thread unless it already runs.
    private func startLoop() {
        guard !started.load(ordering: .acquiring) else { return }
        started.store(true, ordering: .releasing)
        unstarted.withLock { thread in
            defer { thread = nil }
            return thread
        }?.start()
    }

    /// Runs the client as a service: starts its loop, and when the task is cancelled shuts the
    /// client down (pending requests fail with ``HTTP2ClientError/shutdown``).
    public func run() async throws {
        startLoop()
        await waitUntilCancelled()
        await runToCompletion { await self.shutdown() }
    }

    deinit {
        // Without an explicit shutdown(), still stop the thread and free the handles (nobody waits for it).
        storage.shutDown()
    }

    /// Sends `request` and suspends until its response, an ``HTTP2ClientError``, or `CancellationError` when the
    /// calling task is cancelled (the stream is reset, the connection stays).
    ///
    /// Any HTTP status is a response; only transport failures throw.
    public func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        startLoop()
        // Within a push attempt's window (RequestWindow), the request ends with the window, and
        // one held for a connection is handed back unsent so its sender can look again.
        let window = RequestWindow.current
        var deadline = ContinuousClock.now + (request.timeout ?? configuration.requestTimeout)
        if let window { deadline = min(deadline, window.deadline) }
        let id = storage.reserveID()
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (continuation: CheckedContinuation<HTTP2Response, any Error>) in
                    storage.submit(
                        id: id,
                        PendingRequest(
                            request: request, deadline: deadline, handBackWhenHeld: window != nil,
                            continuation: continuation))
                }
            } onCancel: {
                storage.cancel(id: id)
            }
        } catch HTTP2ClientError.heldForConnection {
            window?.noteHeldBack()
            throw HTTP2ClientError.heldForConnection
        }
    }

    /// Requests sent and not yet answered (queued, waiting for a connection, or on the wire).
    public var inFlight: Int { storage.inFlight }

    /// Connections libcurl has been allowed to open so far (a metric; the backoff keeps it low while the server
    /// is unreachable).
    public var connectionAttempts: Int { storage.connectionAttempts.load(ordering: .relaxed) }

    /// What the process-wide closed-stream reset filter has done (see `Sources/CH2ResetFilter`): libcurl 7.88.1
    /// submits RST_STREAM(STREAM_CLOSED) after almost every finished stream, and the filter keeps those off the
    /// wire. `active` is false when the dynamic linker did not bind the name to the filter (then every reset goes
    /// out, and servers with a rapid-reset guard send GOAWAY after about 1,000 of them).
    public static var closedStreamResets: ClosedStreamResets {
        ClosedStreamResets(
            active: sb_h2_reset_filter_active() == 1, suppressed: Int(sb_h2_resets_suppressed()),
            passedOn: Int(sb_h2_resets_passed_on_closed()))
    }

    /// Counters of the closed-stream reset filter, for the whole process.
    public struct ClosedStreamResets: Sendable, Equatable {
        /// Whether libcurl's resets go through the filter.
        public var active: Bool
        /// Resets of closed streams kept off the wire.
        public var suppressed: Int
        /// Resets of closed streams sent anyway, because frames were still queued on their connection.
        public var passedOn: Int
    }

    /// Fails every pending request with ``HTTP2ClientError/shutdown``, stops the loop thread and frees the
    /// libcurl handles; returns when the thread has finished. Later sends fail with `.shutdown` at once.
    public func shutdown() async {
        storage.shutDown()
        startLoop()  // a loop that never ran starts only to see the shutdown and exit
        await storage.waitForLoopExit()
    }

    /// The loop thread's kernel id while it runs (tests check `/proc/self/task/<id>` to see it end).
    var loopThreadID: Int32? { storage.loopThreadID }

    /// Easy handles alive now (tests check it returns to 0: no leaked transfers).
    var liveTransfers: Int { storage.liveTransfers.load(ordering: .relaxed) }
}

/// Carries the loop from `init` to its thread.
///
/// `@unchecked Sendable` is safe because `init` creates the loop, stores it here and creates exactly one thread
/// whose body calls ``take()`` once; `init` keeps no other reference. The thread is started at most once (it
/// leaves `unstarted` under its lock, and `start()` follows), so the loop is only ever touched by that thread,
/// and `Thread.start()` orders `init`'s store before the thread's `take()`.
private final class LoopHandOff: @unchecked Sendable {
    private var loop: HTTP2ClientLoop?

    init(_ loop: HTTP2ClientLoop) { self.loop = loop }

    func take() -> HTTP2ClientLoop {
        guard let loop else { preconditionFailure("the loop was already taken") }
        self.loop = nil
        return loop
    }
}
