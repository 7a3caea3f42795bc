import Glibc

/// A failed system call the transport survived: what failed, why, and what the loop does about
/// it. Reported through `HTTPServerConfiguration.reportProblem` on the loop's thread, once per
/// failure, so a receiver can count every one and must rate-limit what it logs.
///
/// ```swift
/// configuration.reportProblem = { problem in
///     metrics.increment("switchboard_http_accept_errors_total", labels: [("reason", problem.reason)])
/// }
/// ```
public struct HTTPTransportProblem: Sendable, Equatable, CustomStringConvertible {
    /// The call that failed.
    public enum Operation: String, Sendable, Equatable {
        /// `accept4` on the listening socket.
        case accept
        /// `epoll_wait`: the loop could not wait for events.
        case poll = "epoll_wait"
        /// `epoll_ctl`: a socket could not be watched (the connection is closed).
        case watch = "epoll_ctl"
    }

    /// Why it failed.
    public enum Cause: Sendable, Equatable {
        /// The call returned this `errno`.
        case error(Int32)
        /// The accepted connection took one of the descriptors the loops leave free for the
        /// rest of the process (`HTTPServerConfiguration.descriptorReserve`): it was answered
        /// 503 and closed. `limit` is the process's descriptor limit.
        case descriptorReserve(limit: Int, reserve: Int)
    }

    public let operation: Operation
    public let cause: Cause
    /// How long the loop stops accepting because of it (nil: accepting goes on), or for `poll`,
    /// how long the loop waits before it polls again.
    public let pause: Duration?

    public init(operation: Operation, cause: Cause, pause: Duration?) {
        self.operation = operation
        self.cause = cause
        self.pause = pause
    }

    /// A metric label with few values: the `errno` constant's name (`EMFILE`, or `errno 123`
    /// for one without a name here), or `descriptor_reserve`.
    public var reason: String {
        switch cause {
        case .error(let code): ErrnoName.of(code)
        case .descriptorReserve: "descriptor_reserve"
        }
    }

    /// Whether it is the process or the system running out of something (descriptors, socket
    /// buffers, memory, epoll watches) rather than a bad peer or a bug.
    public var isResourceExhaustion: Bool {
        switch cause {
        case .error(let code): ErrnoName.isResourceExhaustion(code)
        case .descriptorReserve: true
        }
    }

    public var description: String {
        var text =
            switch cause {
            case .error(let code): "\(operation.rawValue) failed: \(String(cString: strerror(code))) (\(reason))"
            case .descriptorReserve(let limit, let reserve):
                "out of file descriptors: a connection took one of the last \(reserve) of the \(limit) allowed (RLIMIT_NOFILE), "
                    + "kept for the rest of the process; it was answered 503"
            }
        if let pause {
            let milliseconds = pause.components.seconds * 1000 + pause.components.attoseconds / 1_000_000_000_000_000
            text +=
                operation == .poll
                ? "; polling again in \(milliseconds) ms" : "; accepting paused for \(milliseconds) ms"
        }
        return text
    }
}

/// Names for the `errno` values the transport can meet.
enum ErrnoName {
    private static let names: [Int32: String] = [
        EMFILE: "EMFILE", ENFILE: "ENFILE", ENOBUFS: "ENOBUFS", ENOMEM: "ENOMEM", ENOSPC: "ENOSPC",
        EBADF: "EBADF", EINVAL: "EINVAL", EFAULT: "EFAULT", ENOTSOCK: "ENOTSOCK", EOPNOTSUPP: "EOPNOTSUPP",
        EPERM: "EPERM", EPROTO: "EPROTO", ENOPROTOOPT: "ENOPROTOOPT", ENETDOWN: "ENETDOWN",
        ENETUNREACH: "ENETUNREACH", EHOSTDOWN: "EHOSTDOWN", EHOSTUNREACH: "EHOSTUNREACH", ENONET: "ENONET",
        ECONNABORTED: "ECONNABORTED", EAGAIN: "EAGAIN", EINTR: "EINTR", EEXIST: "EEXIST", ENOENT: "ENOENT",
    ]

    static func of(_ code: Int32) -> String { names[code] ?? "errno \(code)" }

    static func isResourceExhaustion(_ code: Int32) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM, ENOSPC].contains(code)
    }
}

/// What the loop does after `accept4` failed with an `errno`.
enum AcceptFailure: Equatable {
    /// Nothing is wrong; go on accepting (`EINTR`, or the peer gave up: `ECONNABORTED`).
    case retry
    /// The backlog is empty.
    case caughtUp
    /// A connection failed on its way in (accept(2): network errors "should be treated like
    /// EAGAIN by retrying"; `EPERM`: a firewall rule). It is gone; go on accepting, but report it.
    case connectionFailed
    /// Out of descriptors, buffers or memory, or a fault that would repeat at once (`EBADF`,
    /// `EINVAL`…): the listening socket stays readable, so accepting again now would spin.
    /// Stop watching it for a while.
    case pause

    init(errno code: Int32) {
        switch code {
        case EINTR, ECONNABORTED: self = .retry
        case EAGAIN, EWOULDBLOCK: self = .caughtUp
        case EPERM, EPROTO, ENOPROTOOPT, ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, ENONET:
            self = .connectionFailed
        default: self = .pause
        }
    }
}

/// A pause that starts at 100 ms and doubles with each failure that follows, up to 1 s, until
/// `recovered()`: how long a loop stops accepting (or polling) after a failure that would
/// repeat if it tried again at once. Times are monotonic nanoseconds.
struct FailureBackoff: Equatable {
    static let shortest: UInt64 = 100_000_000
    static let longest: UInt64 = 1_000_000_000

    /// When the pause ends; nil when not paused.
    private(set) var resumeAt: UInt64?
    private var next = FailureBackoff.shortest

    var isPaused: Bool { resumeAt != nil }

    /// A failure at `now`: pause; returns the pause's length.
    mutating func failed(now: UInt64) -> UInt64 {
        let pause = next
        next = min(next * 2, Self.longest)
        resumeAt = now + pause
        return pause
    }

    /// True (once) when a pause has ended by `now`.
    mutating func resumeIfDue(now: UInt64) -> Bool {
        guard let resumeAt, now >= resumeAt else { return false }
        self.resumeAt = nil
        return true
    }

    /// The call went through again: the next failure pauses briefly again.
    mutating func recovered() { next = Self.shortest }

    /// Ends a pause early (the loop is shutting down) without forgetting the failures.
    mutating func cancel() { resumeAt = nil }

    /// An `epoll_wait` timeout of at most `milliseconds` that wakes the loop when the pause
    /// ends (rounded up, so the loop never wakes just before it and spins on zero timeouts).
    func timeout(now: UInt64, atMost milliseconds: Int32) -> Int32 {
        guard let resumeAt else { return milliseconds }
        guard resumeAt > now else { return 0 }
        let left = (resumeAt - now + 999_999) / 1_000_000
        return Int32(min(UInt64(milliseconds), left))
    }
}
