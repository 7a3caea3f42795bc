import Foundation
import Glibc
import Synchronization
import SwitchboardHTTP
import SwitchboardObservability

/// Where the HTTP transport's failures go: every one is counted in `/metrics`, and each kind
/// (call and errno) is logged at most once per `logInterval`, so running out of descriptors
/// under a flood of clients shows as a few lines, not thousands.
///
/// - `switchboard_http_accept_errors_total{reason="EMFILE"}`: failed accepts.
/// - `switchboard_http_event_loop_errors_total{call="epoll_wait",reason="…"}`: the loops' own
///   `epoll_wait` and `epoll_ctl` failures.
final class TransportProblemReporter: Sendable {
    static let acceptErrors = "switchboard_http_accept_errors_total"
    static let loopErrors = "switchboard_http_event_loop_errors_total"

    private let metrics: Metrics
    private let logger: Logger
    private let throttle: Mutex<LogThrottle>

    init(metrics: Metrics, logger: Logger, logInterval: Duration = .seconds(10)) {
        self.metrics = metrics
        self.logger = logger
        throttle = Mutex(LogThrottle(interval: logInterval))
    }

    /// Called on an event loop's thread: a counter update and, now and then, one log line.
    func report(_ problem: HTTPTransportProblem) {
        switch problem.operation {
        case .accept:
            metrics.increment(
                Self.acceptErrors,
                help:
                    "Connections the listening sockets could not take, by reason: descriptor_reserve (the last descriptors are kept for the process), EMFILE or ENFILE (out of descriptors), other errno names.",
                labels: [("reason", problem.reason)])
        case .poll, .watch:
            metrics.increment(
                Self.loopErrors,
                help: "Failed epoll_wait and epoll_ctl calls of the HTTP event loops, by call and errno.",
                labels: [("call", problem.operation.rawValue), ("reason", problem.reason)])
        }
        let kind = problem.operation.rawValue + " " + problem.reason
        guard case .log(let suppressed) = throttle.withLock({ $0.occurred(kind, at: .now) }) else { return }
        let message =
            switch problem.operation {
            case .accept where problem.pause != nil: "cannot accept connections"
            case .accept: "a connection failed while being accepted"
            case .poll: "the event loop cannot wait for events"
            case .watch: "the event loop cannot watch a socket"
            }
        let milliseconds = problem.pause.map {
            Int($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)
        }
        logger.log(
            problem.operation == .poll ? .error : .warning, message,
            [
                "reason": .string(problem.reason),
                "error": .string(problem.description),
                "pauseMs": .int(milliseconds ?? 0),
                "suppressed": .int(suppressed),
                // What the operator raises when it is EMFILE (`LimitNOFILE=`, `ulimit -n`).
                "descriptorLimit": .int(Self.descriptorLimit()),
            ])
    }

    private static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        return limit.rlim_cur >= rlim_t(Int.max) ? -1 : Int(limit.rlim_cur)
    }
}
