import Glibc
import Synchronization
import SwitchboardPOSIX

/// Settings of an ``ImpairmentProxy``; everything but the upstream and the profile has a default.
public struct ImpairmentProxyConfiguration: Sendable {
    /// Where each accepted connection is forwarded.
    public var upstream: IPv4Endpoint
    /// What the simulated network does to each connection.
    public var profile: NetworkProfile
    /// Where to listen; port 0 lets the kernel pick (default 127.0.0.1:0).
    public var listen: IPv4Endpoint
    /// Seeds every random decision: the same seed gives the same decisions per connection.
    public var seed: UInt64
    /// Whether a listen address off 127.0.0.0/8 is allowed; off by default, because the proxy
    /// forwards to the upstream without any authentication of its own.
    public var allowNonLoopbackListen: Bool
    /// How long to wait for the upstream to accept a connection.
    public var connectTimeout: Duration
    /// The most bytes one direction of a connection holds before it stops reading, so a fast
    /// sender feels back-pressure as from a real bottleneck's queue.
    public var queueLimitBytes: Int
    /// Receives problems worth logging (an upstream that refused, a failed accept). It is called
    /// on the proxy's threads, so it must not call `stop()`, which waits for them.
    public var diagnostics: @Sendable (String) -> Void

    /// Creates a configuration; see each property for its default.
    public init(
        upstream: IPv4Endpoint,
        profile: NetworkProfile,
        listen: IPv4Endpoint = .loopback(port: 0),
        seed: UInt64 = 1,
        allowNonLoopbackListen: Bool = false,
        connectTimeout: Duration = .seconds(10),
        queueLimitBytes: Int = 256 * 1024,
        diagnostics: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.upstream = upstream
        self.profile = profile
        self.listen = listen
        self.seed = seed
        self.allowNonLoopbackListen = allowNonLoopbackListen
        self.connectTimeout = connectTimeout
        self.queueLimitBytes = queueLimitBytes
        self.diagnostics = diagnostics
    }
}

/// What a proxy has done so far. Byte counts are bytes delivered, after the impairment.
public struct ImpairmentStatistics: Sendable, Equatable {
    /// Connections accepted from clients.
    public var connectionsAccepted = 0
    /// Connections not yet closed.
    public var connectionsOpen = 0
    /// Bytes written to the upstream (client → upstream).
    public var uplinkBytes = 0
    /// Bytes written to clients (upstream → client).
    public var downlinkBytes = 0
    /// Segments and handshake packets that waited for at least one retransmission timeout.
    public var stalls = 0
    /// The retransmission timeouts those stalls added up to, in seconds.
    public var stallSeconds = 0.0
    /// Connections the profile reset (both sides got an RST).
    public var resets = 0
    /// Connections closed because the upstream could not be reached.
    public var upstreamFailures = 0

    /// Creates empty statistics.
    public init() {}
}

/// A TCP proxy on loopback that forwards each connection to an upstream through a simulated
/// weak network (see ``NetworkProfile``).
///
/// One thread accepts, and one thread per connection moves both directions with `poll`, so
/// nothing blocks Swift's cooperative pool. `stop()` (or `deinit`) closes everything and joins
/// every thread.
///
/// ```swift
/// let proxy = ImpairmentProxy(configuration: .init(
///     upstream: .loopback(port: 8080), profile: .poor3G, seed: 7))
/// let port = try proxy.start()   // point the client at 127.0.0.1:port
/// …
/// proxy.stop()
/// print(proxy.statistics.stalls)
/// ```
public final class ImpairmentProxy: Sendable {
    private enum Lifecycle {
        case idle
        case running(ProxyCore, acceptor: JoinableThread)
        case stopped
    }

    /// The settings the proxy was created with.
    public let configuration: ImpairmentProxyConfiguration
    private let counters = ProxyCounters()
    private let lifecycle = Mutex(Lifecycle.idle)

    /// Creates a proxy; nothing listens until `start()`.
    public init(configuration: ImpairmentProxyConfiguration) {
        self.configuration = configuration
    }

    deinit { stop() }

    /// The listening port while running, else `nil`.
    public var port: Int? {
        lifecycle.withLock { state in
            if case .running(let core, _) = state { return core.port }
            return nil
        }
    }

    /// A snapshot of the counters; still readable after `stop()`.
    public var statistics: ImpairmentStatistics { counters.snapshot }

    /// Checks the profile, binds the listening socket and starts accepting. Returns the port
    /// (the kernel's choice when the configured port is 0).
    ///
    /// Throws ``NetSimError``: `invalidProfile`, `badAddress` (listen or upstream),
    /// `nonLoopbackListen`, `bindFailed`, `alreadyStarted`, or `systemCall`.
    @discardableResult
    public func start() throws(NetSimError) -> Int {
        try configuration.profile.validate()
        _ = try configuration.upstream.socketAddress(role: "upstream")
        if configuration.upstream.port == 0 {
            throw NetSimError(.badAddress, "upstream '\(configuration.upstream)': the port must be in 1...65535")
        }
        _ = try configuration.listen.socketAddress(role: "listen address")
        if !configuration.allowNonLoopbackListen, !configuration.listen.isLoopback {
            throw NetSimError(
                .nonLoopbackListen,
                "refusing to listen on \(configuration.listen): the proxy forwards without authentication, so it listens on loopback (127.0.0.0/8) unless non-loopback listening is allowed explicitly"
            )
        }
        return try lifecycle.withLock { state throws(NetSimError) -> Int in
            guard case .idle = state else {
                throw NetSimError(
                    .alreadyStarted, "a proxy starts once: this one was started or stopped before; make a new one")
            }
            let core = try ProxyCore(configuration: configuration, counters: counters)
            do throws(NetSimError) {
                let acceptor = try JoinableThread.start { core.acceptLoop() }
                state = .running(core, acceptor: acceptor)
            } catch {
                core.closeDescriptors()
                throw error
            }
            return core.port
        }
    }

    /// Stops accepting, closes every connection (their peers see the close) and returns once
    /// every thread has ended and every descriptor is closed. Calling it again does nothing.
    public func stop() {
        let running = lifecycle.withLock { state -> (ProxyCore, JoinableThread)? in
            defer { state = .stopped }
            if case .running(let core, let acceptor) = state { return (core, acceptor) }
            return nil
        }
        guard let (core, acceptor) = running else { return }
        core.wakeAll()
        acceptor.join()
        core.joinConnections()
        core.closeDescriptors()
    }
}

/// What the accepting thread and the connection threads share.
final class ProxyCore: Sendable {
    private struct Registry {
        var threads: [UInt64: JoinableThread] = [:]
        var finished: [UInt64] = []
        var nextIndex: UInt64 = 0
    }

    let configuration: ImpairmentProxyConfiguration
    let counters: ProxyCounters
    let port: Int
    let listenFD: Int32
    /// Written once by `wakeAll()` and never read, so it stays readable: every `poll` that
    /// includes it returns at once from then on. This is how every thread learns of `stop()`.
    let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let registry = Mutex(Registry())
    private let stopping = Atomic(false)

    init(configuration: ImpairmentProxyConfiguration, counters: ProxyCounters) throws(NetSimError) {
        self.configuration = configuration
        self.counters = counters
        (listenFD, port) = try Socket.listen(on: configuration.listen)
        var ends: [Int32] = [0, 0]
        do throws(NetSimError) {
            try posixCall("pipe") { pipe(&ends) }
        } catch {
            close(listenFD)
            throw error
        }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakeFD = ends[0]
        wakeWriteFD = ends[1]
    }

    /// Accepts until woken; runs on its own thread.
    func acceptLoop() {
        var fds = [
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                configuration.diagnostics("poll on the listening socket failed: \(describeErrno(errno))")
                return
            }
            if fds[1].revents != 0 { return }
            do {
                while let fd = try Socket.accept(from: listenFD) { startConnection(fd) }
            } catch {
                // EMFILE and the like: say so and back off rather than spin on a readable socket.
                configuration.diagnostics(error.message)
                usleep(50_000)
            }
            reapFinished()
        }
    }

    private func startConnection(_ fd: Int32) {
        counters.update {
            $0.connectionsAccepted += 1
            $0.connectionsOpen += 1
        }
        do {
            try registry.withLock { registry throws(NetSimError) in
                let index = registry.nextIndex
                registry.nextIndex += 1
                let seed = ConnectionSchedule.connectionSeed(proxySeed: configuration.seed, index: index)
                // Created under the lock, so the thread's `connectionEnded` (which takes the lock)
                // always finds its entry.
                registry.threads[index] = try JoinableThread.start { [self] in
                    ProxyConnection(core: self, clientFD: fd, seed: seed).run()
                    connectionEnded(index)
                }
            }
        } catch {
            Socket.abort(fd)
            counters.update { $0.connectionsOpen -= 1 }
            configuration.diagnostics("cannot start a connection thread: \(error.message)")
        }
    }

    private func connectionEnded(_ index: UInt64) {
        counters.update { $0.connectionsOpen -= 1 }
        registry.withLock { $0.finished.append(index) }
    }

    /// Joins the threads of connections that ended, so they do not pile up.
    private func reapFinished() {
        let ended = registry.withLock { registry in
            defer { registry.finished = [] }
            return registry.finished.compactMap { registry.threads.removeValue(forKey: $0) }
        }
        ended.forEach { $0.join() }
    }

    /// Whether `stop()` has begun.
    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    func wakeAll() {
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(wakeWriteFD, &byte, 1)
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
        close(wakeFD)
        close(wakeWriteFD)
    }
}

/// The proxy's counters, shared by its threads and still readable after `stop()`.
final class ProxyCounters: Sendable {
    private let state = Mutex(ImpairmentStatistics())

    var snapshot: ImpairmentStatistics { state.withLock { $0 } }

    func update(_ change: (inout ImpairmentStatistics) -> Void) {
        state.withLock { change(&$0) }
    }
}
