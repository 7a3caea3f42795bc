import SwitchboardPOSIX
/// One accepted socket's state. Touched only on its loop's thread.
final class Connection {
    enum Phase {
        /// Reading (or waiting for) the next request.
        case reading
        /// A handler task owns the request; its response has not arrived yet.
        case handling
        /// A streaming response is being written.
        case streaming
        /// A handler took the connection over after a `101 Switching Protocols` head: bytes go
        /// to it as they arrive, and it writes through its channel.
        case takenOver
        /// Write what is queued, then close.
        case closingAfterFlush
        /// A taken-over connection wrote its last bytes and shut down its sending side; what
        /// still arrives is read and dropped until the peer closes or the deadline passes, so
        /// that unread input does not make the kernel reset the connection under the last bytes
        /// (a WebSocket's close frame).
        case lingering
    }

    let fd: Int32
    let id: UInt64
    let remoteAddress: String
    /// The peer's numeric host, for the per-peer connection cap.
    let peerHost: String
    /// Bytes of the server's body budget this connection's request holds while its body arrives.
    var reservedBodyBytes = 0
    /// Answered before the request's body was read: after the answer, linger instead of closing.
    var lingerAfterFlush = false
    /// Bytes a lingering connection still drops before it closes anyway: enough for a peer to
    /// finish a request's head and a little of its body and read the answer, not a whole
    /// refused body.
    var lingerBytesLeft = 256 * 1024
    var parser: HTTPRequestParser
    var phase = Phase.reading
    var task: Task<Void, Never>?
    var stream: StreamChannel?
    /// The handler that took the connection over and its channel; told once when it closes.
    var takeover: (handler: any HTTPConnectionHandler, channel: TakeoverChannel)?

    var output: [UInt8] = []
    var outputOffset = 0
    var pendingOutput: Int { output.count - outputOffset }

    /// Queues bytes to send. The write-stall clock starts when output goes from none to some,
    /// so time spent idle before a response never counts as a stall.
    func queue(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if pendingOutput == 0 { lastWriteProgress = monotonicNanoseconds() }
        output.append(contentsOf: bytes)
    }

    /// Deadlines on the monotonic clock, in nanoseconds; 0 means none.
    var headerDeadline: UInt64 = 0
    var bodyDeadline: UInt64 = 0
    var idleDeadline: UInt64 = 0
    var lastWriteProgress: UInt64 = 0
    var lingerDeadline: UInt64 = 0

    /// The events registered with epoll right now.
    var interest: UInt32 = 0

    init(fd: Int32, id: UInt64, remoteAddress: String, peerHost: String, limits: HTTPParserLimits) {
        self.fd = fd
        self.id = id
        self.remoteAddress = remoteAddress
        self.peerHost = peerHost
        self.parser = HTTPRequestParser(limits: limits)
    }
}
