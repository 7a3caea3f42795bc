import Foundation
import Glibc
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardObservability

/// The HTTP transport's failures in `/metrics` (every one) and in the log (a line per kind now
/// and then, with how many were left out).
@Suite("Transport problems: counted and logged rate-limited", .timeLimit(.minutes(1)))
struct TransportProblemReporterTests {
    @Test func theThrottleLogsTheFirstThenOnePerIntervalWithTheSuppressedCount() {
        var throttle = LogThrottle(interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(throttle.occurred("accept EMFILE", at: start) == .log(suppressed: 0))
        for second in 1...9 {
            #expect(throttle.occurred("accept EMFILE", at: start + .seconds(second)) == .suppress)
        }
        #expect(
            throttle.occurred("epoll_wait EBADF", at: start + .seconds(9)) == .log(suppressed: 0), "kinds are apart")
        #expect(throttle.occurred("accept EMFILE", at: start + .seconds(10)) == .log(suppressed: 9))
        #expect(throttle.occurred("accept EMFILE", at: start + .seconds(11)) == .suppress)
        #expect(throttle.occurred("accept EMFILE", at: start + .seconds(60)) == .log(suppressed: 1))
    }

    @Test func aThousandFailedAcceptsAreAllCountedAndLoggedOnce() {
        let metrics = Metrics(), sink = RecordingLogSink()
        let reporter = TransportProblemReporter(metrics: metrics, logger: Logger(level: .info, sink: sink))
        for _ in 0..<1000 {
            reporter.report(HTTPTransportProblem(operation: .accept, cause: .error(EMFILE), pause: .milliseconds(100)))
        }
        reporter.report(
            HTTPTransportProblem(
                operation: .accept, cause: .descriptorReserve(limit: 64, reserve: 16), pause: .seconds(1)))
        let text = metrics.render()
        #expect(text.contains(#"switchboard_http_accept_errors_total{reason="EMFILE"} 1000"#), "\(text)")
        #expect(text.contains(#"switchboard_http_accept_errors_total{reason="descriptor_reserve"} 1"#))
        #expect(text.contains("# TYPE switchboard_http_accept_errors_total counter"))
        let lines = sink.recorded
        #expect(lines.count == 2, "\(lines)")
        #expect(
            lines.first?.contains(#""level":"warning","msg":"cannot accept connections","reason":"EMFILE""#) == true,
            "\(lines)")
        #expect(lines.first?.contains(#""pauseMs":100"#) == true)
        #expect(lines.first?.contains(#""descriptorLimit":"#) == true)
        #expect(lines.last?.contains(#""reason":"descriptor_reserve""#) == true)
    }

    @Test func loopFailuresHaveTheirOwnCounterAndAreErrors() {
        let metrics = Metrics(), sink = RecordingLogSink()
        let reporter = TransportProblemReporter(metrics: metrics, logger: Logger(level: .info, sink: sink))
        reporter.report(HTTPTransportProblem(operation: .poll, cause: .error(EBADF), pause: .milliseconds(100)))
        reporter.report(HTTPTransportProblem(operation: .poll, cause: .error(EBADF), pause: .milliseconds(200)))
        reporter.report(HTTPTransportProblem(operation: .watch, cause: .error(ENOMEM), pause: nil))
        let text = metrics.render()
        #expect(
            text.contains(#"switchboard_http_event_loop_errors_total{call="epoll_wait",reason="EBADF"} 2"#), "\(text)")
        #expect(text.contains(#"switchboard_http_event_loop_errors_total{call="epoll_ctl",reason="ENOMEM"} 1"#))
        #expect(sink.recorded.count == 2)
        #expect(
            sink.recorded.first?.contains(#""level":"error","msg":"the event loop cannot wait for events""#) == true,
            "\(sink.recorded)")
    }
}
