import CLinux
import Foundation
import Glibc
import Synchronization
import Testing
@testable import SwitchboardHTTP
import SwitchboardTesting

/// `accept4` and `epoll_wait` failing: the loop pauses (no busy loop), reports each failure, keeps
/// serving the connections it has and recovers. The failures are injected through the server's
/// system-call seams; the real thing, with a low `ulimit -n`, is `DescriptorExhaustionLiveTests`.
@Suite("HTTP transport failures", .serialized, .timeLimit(.minutes(2)))
struct TransportFailureTests {
    /// A system call that fails with an `errno` while told to, and counts its calls meanwhile.
    final class Failing: Sendable {
        private let state = Mutex<(errno: Int32?, failedCalls: Int)>((nil, 0))
        func fail(with code: Int32?) { state.withLock { $0.errno = code } }
        var failedCalls: Int { state.withLock { $0.failedCalls } }

        /// The `errno` to fail with now, counting the call.
        func failure() -> Int32? {
            state.withLock { state in
                guard let code = state.errno else { return nil }
                state.failedCalls += 1
                return code
            }
        }
    }

    final class Problems: Sendable {
        private let list = Mutex<[HTTPTransportProblem]>([])
        func append(_ problem: HTTPTransportProblem) { list.withLock { $0.append(problem) } }
        var all: [HTTPTransportProblem] { list.withLock { $0 } }
    }

    private static let ok: HTTPHandler = { _ in HTTPResponse(status: 200, body: Array("ok".utf8)) }

    /// One request on a keep-alive connection; the response's status (0: none in time).
    private static func status(_ client: RawClient) async -> Int {
        client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = await client.receiveResponses(1, timeout: 15).first ?? ""
        return Int(response.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test(arguments: [EMFILE, ENFILE, ENOBUFS, ENOMEM])
    func outOfDescriptorsPausesAcceptingServesOpenConnectionsAndRecovers(_ code: Int32) async throws {
        let accept = Failing(), problems = Problems()
        try await withServer(
            {
                $0.loopCount = 1
                $0.reportProblem = { problems.append($0) }
                $0.acceptCall = { fd, address, length in
                    if let failure = accept.failure() {
                        errno = failure
                        return -1
                    }
                    return switchboard_accept4(fd, address, length)
                }
            }, handler: Self.ok
        ) { _, port in
            let open = try RawClient(port: port)
            #expect(await Self.status(open) == 200)

            accept.fail(with: code)
            // A client that arrives now waits in the backlog; the listening socket stays readable.
            let waiting = try RawClient(port: port)
            waiting.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            try await Task.sleep(for: .milliseconds(1500))
            // A spin calls accept without pause, thousands of times a second; pauses of 100, 200,
            // 400, 800 ms call it a handful of times.
            #expect(accept.failedCalls >= 1)
            #expect(accept.failedCalls < 50, "accept was called \(accept.failedCalls) times in 1.5 s")
            #expect(await Self.status(open) == 200, "the open connection is served")

            // A failed call is reported right after it returns: the loop may be between the two.
            let failedSoFar = accept.failedCalls
            #expect(await eventually { problems.all.count >= failedSoFar }, "every failure is reported")
            let reported = problems.all
            #expect(
                reported.first
                    == HTTPTransportProblem(operation: .accept, cause: .error(code), pause: .milliseconds(100)))
            #expect(reported.dropFirst().first?.pause == .milliseconds(200), "the pause doubles: \(reported)")
            #expect(reported.allSatisfy { $0.isResourceExhaustion && ($0.pause ?? .zero) <= .seconds(1) })

            accept.fail(with: nil)
            let answer = await waiting.receiveResponses(1, timeout: 15).first ?? ""
            #expect(problems.all.count == accept.failedCalls, "every failure is reported, once")
            #expect(
                answer.hasPrefix("HTTP/1.1 200"), "the waiting client is accepted once accept works again: \(answer)")
        }
    }

    @Test func aConnectionThatFailsOnItsWayInIsReportedAndAcceptingGoesOn() async throws {
        let accept = Failing(), problems = Problems()
        let once = Mutex(true)
        try await withServer(
            {
                $0.loopCount = 1
                $0.reportProblem = { problems.append($0) }
                $0.acceptCall = { fd, address, length in
                    if once.withLock({ first in
                        defer { first = false }
                        return first
                    }) {
                        errno = EPROTO
                        return -1
                    }
                    _ = accept.failure()
                    return switchboard_accept4(fd, address, length)
                }
            }, handler: Self.ok
        ) { _, port in
            let client = try RawClient(port: port)
            #expect(await Self.status(client) == 200, "not paused: served at once")
            #expect(problems.all == [HTTPTransportProblem(operation: .accept, cause: .error(EPROTO), pause: nil)])
        }
    }

    @Test func epollWaitFailingBacksOffInsteadOfSpinningOrStopping() async throws {
        let poll = Failing(), problems = Problems()
        try await withServer(
            {
                $0.loopCount = 1
                $0.reportProblem = { problems.append($0) }
                $0.pollCall = { fd, events, count, timeout in
                    if let failure = poll.failure() {
                        errno = failure
                        return -1
                    }
                    return epoll_wait(fd, events, count, timeout)
                }
            }, handler: Self.ok
        ) { _, port in
            let client = try RawClient(port: port)
            #expect(await Self.status(client) == 200)

            poll.fail(with: EBADF)
            // Wake the loop out of the epoll_wait it sits in; the next one fails.
            let waker = try RawClient(port: port)
            #expect(await eventually(seconds: 10) { poll.failedCalls >= 1 })
            let before = poll.failedCalls
            try await Task.sleep(for: .milliseconds(1500))
            #expect(poll.failedCalls - before < 50, "epoll_wait was called \(poll.failedCalls - before) times in 1.5 s")
            #expect(
                problems.all.first
                    == HTTPTransportProblem(operation: .poll, cause: .error(EBADF), pause: .milliseconds(100)))
            #expect(problems.all.allSatisfy { $0.operation == .poll })

            poll.fail(with: nil)
            // The loop did not give up: the same connection is served again, and the new one.
            #expect(await Self.status(client) == 200)
            #expect(await Self.status(waker) == 200)
        }
    }

    @Test func shutdownEndsALoopWhoseEpollWaitKeepsFailing() async throws {
        let poll = Failing()
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 1)
        configuration.pollCall = { fd, events, count, timeout in
            if let failure = poll.failure() {
                errno = failure
                return -1
            }
            return epoll_wait(fd, events, count, timeout)
        }
        let server = HTTPServer(configuration: configuration, handler: Self.ok)
        let port = try server.start().port
        poll.fail(with: EINVAL)
        let waker = try RawClient(port: port)
        #expect(await eventually(seconds: 10) { poll.failedCalls >= 2 }, "the loop keeps trying")
        // The loop looks at its inbox after each pause, so the stop request gets through.
        let stopped = Signal()
        let shutdown = Task {
            await server.shutdown(gracePeriod: .milliseconds(100))
            stopped.fire()
        }
        #expect(await stopped.wait(seconds: 20), "shutdown returned")
        shutdown.cancel()
        _ = waker
    }
}

@Suite("Failure backoff and accept errors", .timeLimit(.minutes(1)))
struct FailureBackoffTests {
    @Test func pausesDoubleFrom100msTo1sAndResetOnRecovery() {
        var backoff = FailureBackoff()
        var now: UInt64 = 5_000_000_000
        var pauses: [UInt64] = []
        for _ in 0..<6 {
            pauses.append(backoff.failed(now: now))
            #expect(backoff.isPaused)
            let early = backoff.resumeIfDue(now: now + pauses.last! - 1)
            now += pauses.last!
            let due = backoff.resumeIfDue(now: now)
            let again = backoff.resumeIfDue(now: now)
            #expect(!early)
            #expect(due)
            #expect(!again, "resumes once")
        }
        #expect(pauses == [100, 200, 400, 800, 1000, 1000].map { UInt64($0) * 1_000_000 })
        backoff.recovered()
        let afterRecovery = backoff.failed(now: now)
        #expect(afterRecovery == 100_000_000)
    }

    @Test func theLoopTimeoutWakesItWhenThePauseEndsNeverEarly() {
        var backoff = FailureBackoff()
        #expect(backoff.timeout(now: 0, atMost: 1000) == 1000, "not paused: the loop's own timeout")
        _ = backoff.failed(now: 0)
        #expect(backoff.timeout(now: 0, atMost: 1000) == 100)
        #expect(backoff.timeout(now: 0, atMost: 50) == 50, "a shorter timeout of the loop's own wins")
        #expect(backoff.timeout(now: 99_000_001, atMost: 1000) == 1, "rounded up: no zero-timeout spin before the end")
        #expect(backoff.timeout(now: 100_000_000, atMost: 1000) == 0)
        backoff.cancel()
        #expect(!backoff.isPaused)
        #expect(backoff.timeout(now: 0, atMost: 1000) == 1000)
    }

    @Test(arguments: [
        (EINTR, AcceptFailure.retry), (ECONNABORTED, .retry), (EAGAIN, .caughtUp), (EWOULDBLOCK, .caughtUp),
        (EPROTO, .connectionFailed), (ENETDOWN, .connectionFailed), (EHOSTUNREACH, .connectionFailed),
        (EPERM, .connectionFailed),
        (EMFILE, .pause), (ENFILE, .pause), (ENOBUFS, .pause), (ENOMEM, .pause), (EBADF, .pause), (EINVAL, .pause),
    ])
    func acceptErrorsAreSortedByWhatTheLoopDoes(_ code: Int32, _ expected: AcceptFailure) {
        #expect(AcceptFailure(errno: code) == expected)
    }

    @Test func problemsNameTheirReasonAndPause() {
        let emfile = HTTPTransportProblem(operation: .accept, cause: .error(EMFILE), pause: .milliseconds(200))
        #expect(emfile.reason == "EMFILE")
        #expect(emfile.isResourceExhaustion)
        #expect(emfile.description.contains("accepting paused for 200 ms"), "\(emfile)")
        let reserve = HTTPTransportProblem(
            operation: .accept, cause: .descriptorReserve(limit: 64, reserve: 16), pause: nil)
        #expect(reserve.reason == "descriptor_reserve")
        #expect(reserve.isResourceExhaustion)
        #expect(reserve.description.contains("64"))
        let poll = HTTPTransportProblem(operation: .poll, cause: .error(EBADF), pause: .seconds(1))
        #expect(!poll.isResourceExhaustion)
        #expect(poll.description.contains("polling again in 1000 ms"), "\(poll)")
        #expect(HTTPTransportProblem(operation: .accept, cause: .error(4095), pause: nil).reason == "errno 4095")
    }
}
