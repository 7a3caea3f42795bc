import CLinux
import Foundation
import SwitchboardObservability
import Glibc
import Synchronization
import SwitchboardPOSIX
// The server's address type is part of this module's API (`start()`, `localAddress`).
@_exported import struct SwitchboardPOSIX.SocketAddress

/// A request handler: transport-neutral, never throws (errors are responses).
public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// Builds the body of an error the transport itself answers (malformed request, timeout, busy).
public typealias HTTPErrorResponder = @Sendable (_ status: Int, _ code: String, _ message: String) -> HTTPResponse

/// What the server does with a request whose head arrived and whose body follows.
public enum HTTPBodyAdmission: Sendable {
    /// Read a body of at most this many bytes (413 beyond, before any of it is kept).
    case accept(maxBodyBytes: Int)
    /// Answer this at once and close, without reading the body (an unknown route).
    case refuse(HTTPResponse)
}

/// Settings of the HTTP server; every value has a default.
public struct HTTPServerConfiguration: Sendable {
    /// The address to listen on (a numeric address or a host name).
    public var host: String
    /// The port; 0 lets the kernel pick a free one.
    public var port: Int
    /// How many event loops (threads) to run; default one per core.
    public var loopCount: Int
    /// Parser limits: head size, header count, body size.
    public var limits: HTTPParserLimits
    /// How long a client may take to send a request head (slowloris defence).
    public var headerTimeout: Duration
    /// How long a client may take to send a body once the head arrived.
    public var bodyTimeout: Duration
    /// How long a keep-alive connection may sit idle between requests.
    public var idleTimeout: Duration
    /// How long queued output may make no progress before the connection is dropped.
    public var writeTimeout: Duration
    /// The most connections open at once; more are answered 503 and closed.
    public var maxConnections: Int
    /// The most connections one peer address may hold open; more are answered 503 and closed.
    /// Addresses in ``unlimitedPeers`` (a reverse proxy) are exempt. 0 means no cap.
    public var maxConnectionsPerPeer: Int
    /// Peer addresses without a per-peer cap: the trusted reverse proxies, whose connections
    /// carry many clients.
    public var unlimitedPeers: Set<String>
    /// Decides, once a head with a body arrived, whether and how much body to read: the
    /// route's own limit, or an answer at once for a request no route takes.
    public var admitBody: @Sendable (HTTPRequestHead) -> HTTPBodyAdmission
    /// The most bytes all connections together may hold of request bodies still arriving
    /// (each request counts its announced length, or its limit when chunked); one more body is
    /// answered 503 `SERVER_BUSY` and the connection closed.
    public var bodyBufferBudget: Int
    /// Bodies larger than this have their handler start on the shared thread pool instead of
    /// the loop, so decoding them never delays the loop's other connections.
    public var offloadBodyBytes: Int
    /// The listen backlog.
    public var backlog: Int32
    /// Produces the error responses the transport sends by itself.
    public var errorResponder: HTTPErrorResponder
    /// Descriptors the loops leave free for the rest of the process (database, outgoing
    /// connections, the Swift runtime, which traps when it cannot open a file); at most a
    /// quarter of the limit. A client that would take one of them is answered 503, and
    /// accepting pauses as when the limit is reached.
    public var descriptorReserve: Int
    /// Receives each failure the transport survived (accept, `epoll_wait`, `epoll_ctl`), on
    /// the loop's thread: count them all, rate-limit what you log. It must not block.
    public var reportProblem: @Sendable (HTTPTransportProblem) -> Void

    /// Creates a configuration; see each property for its default.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        loopCount: Int = ProcessInfo.processInfo.activeProcessorCount,
        limits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(75),
        writeTimeout: Duration = .seconds(30),
        maxConnections: Int = 20_000,
        maxConnectionsPerPeer: Int = 0,
        unlimitedPeers: Set<String> = [],
        admitBody: (@Sendable (HTTPRequestHead) -> HTTPBodyAdmission)? = nil,
        bodyBufferBudget: Int = 64 << 20,
        offloadBodyBytes: Int = 64 * 1024,
        backlog: Int32 = 4096,
        errorResponder: @escaping HTTPErrorResponder = HTTPServerConfiguration.jsonErrorEnvelope,
        descriptorReserve: Int = 64,
        reportProblem: @escaping @Sendable (HTTPTransportProblem) -> Void = { _ in }
    ) {
        self.host = host
        self.port = port
        self.loopCount = max(1, loopCount)
        self.limits = limits
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerPeer = max(0, maxConnectionsPerPeer)
        self.unlimitedPeers = unlimitedPeers
        let maxBodyBytes = limits.maxBodyBytes
        self.admitBody = admitBody ?? { _ in .accept(maxBodyBytes: maxBodyBytes) }
        self.bodyBufferBudget = max(0, bodyBufferBudget)
        self.offloadBodyBytes = max(0, offloadBodyBytes)
        self.backlog = backlog
        self.errorResponder = errorResponder
        self.descriptorReserve = max(0, descriptorReserve)
        self.reportProblem = reportProblem
    }

    /// `accept4` with `SOCK_NONBLOCK | SOCK_CLOEXEC`, and `epoll_wait`: replaced in tests to
    /// fail on demand.
    var acceptCall: @Sendable (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32 = {
        switchboard_accept4($0, $1, $2)
    }
    var pollCall: @Sendable (Int32, UnsafeMutablePointer<epoll_event>?, Int32, Int32) -> Int32 = {
        epoll_wait($0, $1, $2, $3)
    }

    /// `{"error":{"code":...,"message":...}}` as JSON.
    public static let jsonErrorEnvelope: HTTPErrorResponder = { status, code, message in
        let body = #"{"error":{"code":"\#(JSONText.escape(code))","message":"\#(JSONText.escape(message))"}}"#
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
    }
}

/// State every loop of one server shares.
final class ServerShared: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: HTTPHandler
    let headerTimeout: UInt64
    let bodyTimeout: UInt64
    let idleTimeout: UInt64
    let writeTimeout: UInt64
    private let openConnections = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)
    private let bufferedBodyBytes = Atomic<Int>(0)
    /// Open connections per peer address, for ``HTTPServerConfiguration/maxConnectionsPerPeer``.
    private let peers = Mutex<[String: Int]>([:])

    init(configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        headerTimeout = configuration.headerTimeout.nanoseconds
        bodyTimeout = configuration.bodyTimeout.nanoseconds
        idleTimeout = configuration.idleTimeout.nanoseconds
        writeTimeout = configuration.writeTimeout.nanoseconds
    }

    var connectionCount: Int { openConnections.load(ordering: .relaxed) }
    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func beginDraining() { draining.store(true, ordering: .relaxed) }

    func admitConnection() -> Bool {
        let (_, open) = openConnections.wrappingAdd(1, ordering: .relaxed)
        if open <= configuration.maxConnections { return true }
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    func releaseConnection() { openConnections.wrappingSubtract(1, ordering: .relaxed) }

    /// Counts a connection of `peer` against the per-peer cap; false (nothing counted) when
    /// the peer holds as many as it may.
    func admitPeer(_ peer: String) -> Bool {
        let cap = configuration.maxConnectionsPerPeer
        guard cap > 0, !configuration.unlimitedPeers.contains(peer) else { return true }
        return peers.withLock { peers in
            let open = peers[peer, default: 0]
            guard open < cap else { return false }
            peers[peer] = open + 1
            return true
        }
    }

    /// Releases what ``admitPeer(_:)`` counted.
    func releasePeer(_ peer: String) {
        let cap = configuration.maxConnectionsPerPeer
        guard cap > 0, !configuration.unlimitedPeers.contains(peer) else { return }
        peers.withLock { peers in
            let open = peers[peer, default: 1] - 1
            peers[peer] = open > 0 ? open : nil
        }
    }

    /// Reserves `bytes` of the body budget; false (nothing reserved) when it would overflow.
    func reserveBody(_ bytes: Int) -> Bool {
        let (_, total) = bufferedBodyBytes.wrappingAdd(bytes, ordering: .relaxed)
        if total <= configuration.bodyBufferBudget { return true }
        bufferedBodyBytes.wrappingSubtract(bytes, ordering: .relaxed)
        return false
    }

    /// Returns what ``reserveBody(_:)`` reserved.
    func releaseBody(_ bytes: Int) {
        if bytes > 0 { bufferedBodyBytes.wrappingSubtract(bytes, ordering: .relaxed) }
    }

    /// Bytes of request bodies reserved now.
    var bufferedBodyByteCount: Int { bufferedBodyBytes.load(ordering: .relaxed) }

    func errorResponse(status: Int, code: String, message: String) -> HTTPResponse {
        configuration.errorResponder(status, code, message)
    }

    func report(_ problem: HTTPTransportProblem) { configuration.reportProblem(problem) }
}

/// An HTTP/1.1 server: one epoll loop per core on `SO_REUSEPORT` sockets.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 0)) { request in
///     HTTPResponse(status: 200, body: Array("hi".utf8))
/// }
/// let address = try server.start()
/// ...
/// await server.shutdown(gracePeriod: .seconds(10))
/// ```
public final class HTTPServer: Sendable {
    private let shared: ServerShared
    private let state = Mutex<(loops: [EventLoop], address: SocketAddress?)>(([], nil))

    /// Creates a server; nothing listens until `start()`.
    public init(configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) {
        shared = ServerShared(configuration: configuration, handler: handler)
    }

    /// The number of open client connections.
    public var openConnectionCount: Int { shared.connectionCount }

    /// Bytes reserved now for request bodies still arriving.
    public var bufferedBodyByteCount: Int { shared.bufferedBodyByteCount }

    /// The bound address once started.
    public var localAddress: SocketAddress? { state.withLock { $0.address } }

    /// Binds one listening socket per loop and starts the loop threads.
    /// Returns the bound address (with the kernel's port when 0 was asked for).
    @discardableResult
    public func start() throws -> SocketAddress {
        let configuration = shared.configuration
        let limit = Self.raiseDescriptorLimit(to: configuration.maxConnections + 1024)
        let descriptors = (limit: limit, reserve: min(configuration.descriptorReserve, limit / 4))
        signal(SIGPIPE, SIG_IGN)
        var sockets: [Int32] = []
        var bound: SocketAddress
        do {
            let port = try TCPSocket.reservePort(host: configuration.host, port: configuration.port)
            let first = try TCPSocket.listen(
                host: configuration.host, port: port, backlog: configuration.backlog, sharedPort: true)
            sockets.append(first.fd)
            bound = first.address
            for _ in 1..<configuration.loopCount {
                sockets.append(
                    try TCPSocket.listen(
                        host: configuration.host, port: port, backlog: configuration.backlog, sharedPort: true
                    ).fd)
            }
        } catch {
            sockets.forEach { close($0) }
            throw error
        }
        let loops = try sockets.enumerated().map {
            try EventLoop(index: $0.offset, listenFD: $0.element, server: shared, descriptors: descriptors)
        }
        // Each loop names its own thread (sb-http-loop-N) once it runs.
        for loop in loops { Thread { loop.run() }.start() }
        state.withLock { $0 = (loops, bound) }
        return bound
    }

    /// Stops the loops without waiting or draining (a start that failed half way); their
    /// threads end within one wake-up.
    public func stopNow() {
        state.withLock { $0.loops }.forEach { $0.requestStop() }
    }

    /// Stops accepting, closes idle connections and ends streams, waits up to `gracePeriod`
    /// for requests in flight, then closes whatever is left. Returns when every loop stopped.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        let loops = state.withLock { $0.loops }
        shared.beginDraining()
        loops.forEach { $0.requestDrain() }
        let deadline = ContinuousClock.now + gracePeriod
        // A cancelled caller's sleeps return at once: it gives up the grace instead of spinning
        // through it, and the loops are stopped now (they finish within one wake-up).
        while ContinuousClock.now < deadline, !loops.allSatisfy(\.isFinished), !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
        loops.forEach { $0.requestStop() }
        while !loops.allSatisfy(\.isFinished) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Raises the soft descriptor limit towards `wanted` (up to the hard limit); returns the
    /// soft limit in force.
    private static func raiseDescriptorLimit(to wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Int(Int32.max) }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(min(limit.rlim_cur, rlim_t(Int32.max)))
    }
}
