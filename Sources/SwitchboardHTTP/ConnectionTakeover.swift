import Glibc

/// Takes a connection over after a `101 Switching Protocols` head (WebSocket, for one).
///
/// Every method runs on the connection's event-loop thread, one at a time, so an implementation
/// may keep loop-confined state without locks as long as nothing else touches it. None of them
/// may block: they run between the loop's socket events. `connectionClosed()` comes exactly
/// once, whether or not `connectionStarted(_:)` came first (the client may leave before the
/// head is written), and nothing comes after it.
///
/// ```swift
/// // @unchecked Sendable: `connection` is touched only in the callbacks, which all run on the
/// // connection's loop thread, one at a time (see above).
/// final class Echo: HTTPConnectionHandler, @unchecked Sendable {
///     var connection: HTTPTakenConnection?
///     func connectionStarted(_ connection: HTTPTakenConnection) { self.connection = connection }
///     func connectionReceived(_ bytes: UnsafeRawBufferPointer) { _ = connection?.send(Array(bytes)) }
///     func connectionClosed() { connection = nil }
/// }
/// return HTTPResponse(switchingProtocols: ["Upgrade": "echo"], to: Echo())
/// ```
public protocol HTTPConnectionHandler: AnyObject, Sendable {
    /// The `101` head is queued; `connection` writes after it.
    func connectionStarted(_ connection: HTTPTakenConnection)
    /// Bytes arrived. The buffer is valid only during the call. Bytes the client sent right
    /// behind its request head come first, in one call after `connectionStarted(_:)`.
    func connectionReceived(_ bytes: UnsafeRawBufferPointer)
    /// About once a second, with the monotonic clock's reading in nanoseconds: for idle
    /// timeouts and keep-alive pings. Does nothing unless implemented.
    func connectionTick(monotonicNanoseconds: UInt64)
    /// The server is shutting down: end the protocol politely and close. The default does
    /// nothing, and the connection is dropped when the shutdown's grace period is over.
    func connectionShutdownRequested()
    /// The connection is gone: the peer closed it, it failed, or it was closed on request.
    func connectionClosed()
}

extension HTTPConnectionHandler {
    public func connectionTick(monotonicNanoseconds: UInt64) {}
    public func connectionShutdownRequested() {}
}

/// The writing end of a taken-over connection; any thread may use it.
///
/// Writes never wait unless asked to (`write(_:)`): a relay that must not fall behind looks at
/// `unsentByteCount` and drops what a slow peer cannot take, while a producer task that must
/// not lose anything awaits `write(_:)`, which waits while too much is unsent.
public struct HTTPTakenConnection: Sendable {
    let channel: TakeoverChannel
    /// The peer address as `host:port`, for logs.
    public let remoteAddress: String

    /// Queues bytes for the socket without waiting; false once the connection is gone or closing.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool { channel.offer(bytes) }

    /// Sends bytes, waiting while more than 256 KiB are unsent; throws `HTTPStreamClosed` once
    /// the connection is gone.
    public func write(_ bytes: [UInt8]) async throws { try await channel.write(bytes) }

    /// Bytes queued that have not reached the socket yet.
    public var unsentByteCount: Int { channel.unsentByteCount }

    /// Whether the connection is still open for writing.
    public var isOpen: Bool { channel.isOpen }

    /// Shrinks the kernel's send buffer (Linux doubles the value and keeps a floor of about
    /// 4.6 KB), so that a peer that reads too slowly shows as `unsentByteCount` within a
    /// fraction of a second instead of after megabytes: for live media, where late is useless.
    /// Call it from `connectionStarted(_:)` (on any other thread it does nothing).
    public func limitSendBuffer(to bytes: Int) {
        // On the loop thread only, where the descriptor cannot be closed (and reused) meanwhile.
        guard channel.loop.isLoopThread, channel.isOpen else { return }
        var size = Int32(clamping: bytes)
        setsockopt(channel.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Closes the connection once what is queued is written.
    public func close() { channel.finish(abort: false) }

    /// Drops the connection at once, discarding unsent bytes.
    public func abort() { channel.finish(abort: true) }
}
