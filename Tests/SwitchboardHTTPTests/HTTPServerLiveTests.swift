import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
import SwitchboardTesting

/// A one-shot flag that tests can await with a deadline instead of sleeping blindly.
final class Signal: Sendable {
    private let state = Mutex(false)
    func fire() { state.withLock { $0 = true } }
    var fired: Bool { state.withLock { $0 } }

    /// Waits until fired (bounded by `seconds`, generous by default); returns whether it fired.
    func wait(seconds: Double = generousWait) async -> Bool {
        await eventually(seconds: seconds) { self.fired }
    }
}

/// A gate a handler waits at until the test opens it, whether or not its task is cancelled: the
/// stand-in for work that ignores cancellation, or that takes as long as the test decides.
final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let openAlready = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if openAlready { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

private let echo: HTTPHandler = { request in
    HTTPResponse(
        status: 200, headers: ["Content-Type": "text/plain"],
        body: Array("\(request.method) \(request.path) \(request.body.count)".utf8))
}

@Suite("HTTP server over loopback", .serialized, .timeLimit(.minutes(5)))
struct HTTPServerLiveTests {
    @Test func keepAliveAndPipelining() async throws {
        try await withServer(handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send(
                "GET /one HTTP/1.1\r\nHost: a\r\n\r\nPOST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /three HTTP/1.1\r\nHost: a\r\n\r\n"
            )
            let responses = await client.receiveResponses(3)
            #expect(responses.count == 3)
            #expect(
                responses.map { $0.components(separatedBy: "\r\n\r\n").last ?? "" } == [
                    "GET /one 0", "POST /two 3", "GET /three 0",
                ])
            // The same connection serves a later request too.
            client.send("GET /four HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.receiveResponses(1).first?.hasSuffix("GET /four 0") == true)
        }
    }

    @Test func pipelinedSlowAndFastHandlersAnswerInOrder() async throws {
        let handler: HTTPHandler = { request in
            if request.path == "/slow" { try? await Task.sleep(for: .milliseconds(200)) }
            return HTTPResponse(status: 200, body: Array(request.path.utf8))
        }
        try await withServer(handler: handler) { _, port in
            let client = try RawClient(port: port)
            client.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\nGET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
            let bodies = await client.receiveResponses(2).map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
            #expect(bodies == ["/slow", "/fast"])
        }
    }

    @Test func largeBodyGets413AndTheConnectionCloses() async throws {
        try await withServer({ $0.limits.maxBodyBytes = 1000 }, handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n")
            let reply = await client.receive { $0.contains("}}") }
            #expect(reply.text.hasPrefix("HTTP/1.1 413 "))
            #expect(reply.text.contains(#""code":"BODY_TOO_LARGE""#))
            #expect(reply.text.contains("Connection: close"))
            #expect(await client.receive().closed)
        }
    }

    @Test func expectContinueGets100ThenTheResponse() async throws {
        try await withServer(handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            let interim = await client.receive { $0.contains("\r\n\r\n") }
            #expect(interim.text == "HTTP/1.1 100 Continue\r\n\r\n")
            client.send("hello")
            #expect(await client.receiveResponses(1).first?.hasSuffix("PUT /x 5") == true)
        }
    }

    @Test func chunkedRequestBodyOverTheWire() async throws {
        try await withServer(handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwiki\r\n")
            try await Task.sleep(for: .milliseconds(50))
            client.send("5\r\npedia\r\n0\r\n\r\n")
            #expect(await client.receiveResponses(1).first?.hasSuffix("POST /c 9") == true)
        }
    }

    @Test func malformedRequestGets400EnvelopeAndClose() async throws {
        try await withServer(handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost : a\r\n\r\n")
            let reply = await client.receive()
            #expect(reply.text.hasPrefix("HTTP/1.1 400 "))
            #expect(reply.text.contains(#"{"error":{"code":"BAD_REQUEST","message":"malformed header field"}}"#))
            #expect(reply.closed)
        }
    }

    @Test func headAnswersHeadersWithoutBody() async throws {
        try await withServer(handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n")
            let text = await client.receive { $0.contains("GET /after 0") }.text
            // HEAD's Content-Length describes the GET body, and no body bytes follow it.
            #expect(text.hasPrefix("HTTP/1.1 200 OK"))
            #expect(text.contains("Content-Length: 9\r\n"))
            #expect(text.contains("\r\n\r\nHTTP/1.1 200 OK"))
        }
    }

    @Test func slowlorisIsClosedAtTheHeaderDeadline() async throws {
        try await withServer({ $0.headerTimeout = .seconds(1) }, handler: echo) { server, port in
            let client = try RawClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
            // Keep trickling one byte of the same header value every 100 ms, ten times within the
            // 1 s deadline: a deadline that restarted with each read would never fire, and this
            // loop would run into its bound. One field of a few hundred bytes at most, so no header
            // limit can end the connection instead.
            var reply = ""
            var closed = false
            let bound = ContinuousClock.now + .seconds(generousWait)
            while !closed, ContinuousClock.now < bound {
                client.send("a")
                let answer = await client.receive(timeout: 0.1)
                reply += answer.text
                closed = answer.closed
            }
            #expect(closed, "still open after \(generousWait) s of trickling")
            #expect(reply.hasPrefix("HTTP/1.1 408 "), "\(reply)")
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func idleKeepAliveConnectionIsClosed() async throws {
        try await withServer({ $0.idleTimeout = .seconds(1) }, handler: echo) { _, port in
            let client = try RawClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.receiveResponses(1).count == 1)
            #expect(await client.receive().closed)
        }
    }

    @Test func disconnectCancelsTheHeldHandler() async throws {
        let started = Signal()
        let cancelled = Signal()
        let handler: HTTPHandler = { _ in
            started.fire()
            // Hold like a long poll would, until cancelled.
            await withTaskCancellationHandler {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
            } onCancel: {
                cancelled.fire()
            }
            return HTTPResponse(status: 200)
        }
        try await withServer(handler: handler) { server, port in
            var client: RawClient? = try RawClient(port: port)
            client?.send("GET /events?wait=25 HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await started.wait())
            #expect(!cancelled.fired)
            client = nil  // closes the socket
            #expect(await cancelled.wait())
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func gracefulShutdownFinishesTheInFlightRequest() async throws {
        let started = Signal()
        let release = Latch()
        defer { release.open() }
        let handler: HTTPHandler = { request in
            if request.path == "/slow" {
                started.fire()
                await release.wait()
            }
            return HTTPResponse(status: 200, body: Array("done \(request.path)".utf8))
        }
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, loopCount: 2), handler: handler)
        let port = try server.start().port
        let idle = try RawClient(port: port)
        idle.send("GET /warm HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await idle.receiveResponses(1).count == 1)
        let busy = try RawClient(port: port)
        busy.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await started.wait())
        let shutdown = Task { await server.shutdown(gracePeriod: .seconds(generousWait)) }
        // The idle keep-alive connection is closed: shutdown is under way while /slow is held.
        #expect(await idle.receive().closed)
        release.open()
        let reply = await busy.receive()
        #expect(reply.text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(reply.text.contains("Connection: close"))
        #expect(reply.text.hasSuffix("done /slow"))
        #expect(reply.closed)
        // Nothing listens any more.
        try await value(of: shutdown)
        #expect(throws: ConnectError.self) { try RawClient(port: port) }
    }

    @Test func shutdownGraceIsBounded() async throws {
        let started = Signal()
        let release = Latch()
        // A handler that ignores cancellation and would hold its request until the test ends.
        let handler: HTTPHandler = { _ in
            started.fire()
            await release.wait()
            return HTTPResponse(status: 200)
        }
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, loopCount: 1), handler: handler)
        let port = try server.start().port
        let client = try RawClient(port: port)
        client.send("GET /forever HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await started.wait())
        let finished = Signal()
        let shutdown = Task {
            await server.shutdown(gracePeriod: .milliseconds(300))
            finished.fire()
        }
        // An unbounded grace would wait for the handler, which only the latch below releases.
        #expect(await finished.wait(), "shutdown waited for a handler past its grace")
        #expect(await client.receive().closed)
        release.open()
        try await value(of: shutdown)
    }

    @Test func streamingResponseDeliversChunksAndNoticesTheClientLeaving() async throws {
        let producerEnded = Signal()
        let handler: HTTPHandler = { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "text/event-stream"]) { writer in
                defer { producerEnded.fire() }
                var n = 0
                while true {
                    try await writer.write("data: \(n)\n\n")
                    n += 1
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        try await withServer(handler: handler) { server, port in
            var client: RawClient? = try RawClient(port: port)
            client?.send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
            let text = await client?.receive { $0.contains("data: 2") }.text ?? ""
            #expect(text.hasPrefix("HTTP/1.1 200 OK"))
            #expect(text.contains("Transfer-Encoding: chunked"))
            #expect(text.contains("9\r\ndata: 0\n\n\r\n"))
            client = nil
            #expect(await producerEnded.wait())
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aClientThatStopsReadingIsDroppedAtTheWriteTimeout() async throws {
        let producerFailed = Signal()
        let handler: HTTPHandler = { _ in
            HTTPResponse(status: 200) { writer in
                let block = [UInt8](repeating: 120, count: 64 * 1024)
                do {
                    // Far more than loopback socket buffers hold; back-pressure makes this wait.
                    for _ in 0..<4096 { try await writer.write(block) }
                } catch {
                    producerFailed.fire()
                    throw error
                }
            }
        }
        try await withServer({ $0.writeTimeout = .seconds(1) }, handler: handler) { server, port in
            let client = try RawClient(port: port)
            client.send("GET /firehose HTTP/1.1\r\nHost: a\r\n\r\n")
            // Never read: the server's writes stall, and the sweep drops the connection.
            #expect(await producerFailed.wait())
            #expect(await eventually { server.openConnectionCount == 0 })
            withExtendedLifetime(client) {}
        }
    }

    @Test func finishedStreamKeepsTheConnection() async throws {
        let handler: HTTPHandler = { request in
            if request.path == "/plain" { return HTTPResponse(status: 200, body: Array("plain".utf8)) }
            return HTTPResponse(status: 200) { writer in
                try await writer.write("a")
                try await writer.write("bc")
            }
        }
        try await withServer(handler: handler) { _, port in
            let client = try RawClient(port: port)
            client.send("GET /s HTTP/1.1\r\nHost: a\r\n\r\nGET /plain HTTP/1.1\r\nHost: a\r\n\r\n")
            let text = await client.receive { $0.hasSuffix("plain") }.text
            #expect(text.contains("1\r\na\r\n2\r\nbc\r\n0\r\n\r\nHTTP/1.1 200 OK"))
        }
    }

    @Test func connectionCapAnswers503() async throws {
        try await withServer(
            {
                $0.maxConnections = 2
                $0.loopCount = 1
            }, handler: echo
        ) { server, port in
            let first = try RawClient(port: port)
            let second = try RawClient(port: port)
            #expect(await eventually { server.openConnectionCount == 2 })
            let third = try RawClient(port: port)
            let reply = await third.receive()
            #expect(reply.text.hasPrefix("HTTP/1.1 503 "))
            #expect(reply.text.contains("SERVER_BUSY"))
            first.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            second.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await first.receiveResponses(1).count == 1)
            #expect(await second.receiveResponses(1).count == 1)
        }
    }

    @Test func manyConcurrentClients() async throws {
        try await withServer(handler: echo) { _, port in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<20 {
                    group.addTask {
                        let client = try RawClient(port: port)
                        var answered = 0
                        for request in 0..<25 {
                            client.send("GET /w\(worker)/r\(request) HTTP/1.1\r\nHost: a\r\n\r\n")
                            if await client.receiveResponses(1).first?.hasSuffix("GET /w\(worker)/r\(request) 0")
                                == true
                            {
                                answered += 1
                            }
                        }
                        return answered
                    }
                }
                var total = 0
                for try await answered in group { total += answered }
                #expect(total == 500)
            }
        }
    }
}
