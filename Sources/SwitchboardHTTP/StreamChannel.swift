import Synchronization

/// The task-side end of a streaming response: frames bytes, applies back-pressure, and learns
/// from the loop when the client has gone.
final class StreamChannel: Sendable {
    /// Unsent bytes above which a writer waits for the loop to drain the socket.
    static let highWater = 256 * 1024

    private struct State {
        var unsent = 0
        var closed = false
        var waiter: CheckedContinuation<Void, any Error>?
    }

    private let loop: EventLoop
    private let fd: Int32
    private let connectionID: UInt64
    private let chunked: Bool
    private let state = Mutex(State())

    init(loop: EventLoop, fd: Int32, connectionID: UInt64, chunked: Bool) {
        self.loop = loop
        self.fd = fd
        self.connectionID = connectionID
        self.chunked = chunked
    }

    var isOpen: Bool { state.withLock { !$0.closed } }

    func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        if Task.isCancelled { throw HTTPStreamClosed() }
        var framed: [UInt8]
        if chunked {
            framed = Array(String(bytes.count, radix: 16).utf8)
            framed.reserveCapacity(framed.count + bytes.count + 4)
            framed.append(contentsOf: [13, 10])
            framed.append(contentsOf: bytes)
            framed.append(contentsOf: [13, 10])
        } else {
            framed = bytes
        }
        let mustWait = try state.withLock { state throws(HTTPStreamClosed) -> Bool in
            if state.closed { throw HTTPStreamClosed() }
            state.unsent += framed.count
            return state.unsent > Self.highWater
        }
        loop.enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: framed, then: .continueStream))
        if mustWait {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = state.withLock { state in
                    if state.closed { return .failure(HTTPStreamClosed()) }
                    if state.unsent <= Self.highWater { return .success(()) }
                    state.waiter = continuation
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        }
    }

    /// Called by the loop when everything queued so far has reached the socket.
    func drained() {
        let waiter = state.withLock { state in
            state.unsent = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Called by the loop when the connection is gone or closing.
    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: HTTPStreamClosed())
    }
}

/// Bytes a task hands to a loop for one connection, and what the loop does after queueing them.
struct Outbound: Sendable {
    enum Then: Sendable {
        /// More stream data will follow.
        case continueStream
        /// The head of a stream; the connection now belongs to this channel.
        case startStream(StreamChannel)
        /// A `101` head; from now on the connection belongs to this handler and channel.
        case takeOver(any HTTPConnectionHandler, TakeoverChannel)
        /// A taken-over connection's channel has bytes (or its close) queued: take them.
        case drainTakeover(TakeoverChannel)
        /// The response is complete; read the next request.
        case keepAlive
        /// The response is complete; close once it is sent.
        case close
        /// Drop the connection now (a stream failed half-way).
        case abort
    }

    let fd: Int32
    let connectionID: UInt64
    let bytes: [UInt8]
    let then: Then
}

extension Outbound {
    /// The connection is gone before this could be delivered: whoever waits on it learns so.
    func connectionWentAway() {
        switch then {
        case .startStream(let channel):
            channel.close()
        case .takeOver(let handler, let channel):
            channel.close()
            handler.connectionClosed()
        case .drainTakeover, .continueStream, .keepAlive, .close, .abort:
            break
        }
    }
}
