import Foundation
@testable import SwitchboardHTTP
import SwitchboardTesting
import Synchronization
import Testing

/// What a body costs before a handler sees it: the route's limit, an answer at the head for a
/// request no route takes, the budget for bodies still arriving, the per-peer connection cap,
/// and large bodies handled off the loop.
@Suite("HTTP server: what a stranger can cost", .serialized, .timeLimit(.minutes(3)))
struct HTTPServerAdmissionTests {
    private static let echo: HTTPHandler = { request in
        HTTPResponse(
            status: 200, body: Array("\(request.method) \(request.path) \(request.body.count) \(threadName())".utf8))
    }

    /// Only `/small` (10 bytes) and `/big` are routes here.
    private static let admit: @Sendable (HTTPRequestHead) -> HTTPBodyAdmission = { head in
        switch head.path {
        case "/small": .accept(maxBodyBytes: 10)
        case "/big": .accept(maxBodyBytes: 1 << 20)
        default:
            .refuse(
                HTTPResponse(status: 404, body: Array(#"{"error":{"code":"NOT_FOUND","message":"no route"}}"#.utf8)))
        }
    }

    @Test("a request no route takes is answered at its head; its body is never read")
    func unroutedIsAnsweredAtTheHead() async throws {
        let handled = Atomic<Int>(0)
        try await withServer(
            { $0.admitBody = Self.admit },
            handler: { request in
                handled.add(1, ordering: .relaxed)
                return await Self.echo(request)
            }
        ) { server, port in
            let client = try RawClient(port: port)
            client.send("POST /nowhere HTTP/1.1\r\nHost: a\r\nContent-Length: 500000\r\n\r\n")
            let reply = await client.receive { $0.contains("}}") }
            #expect(reply.text.hasPrefix("HTTP/1.1 404 "))
            #expect(reply.text.contains("Connection: close"))
            #expect(handled.load(ordering: .relaxed) == 0)
            #expect(server.bufferedBodyByteCount == 0)
        }
    }

    @Test("a route's own body limit is 413 before the body; within it the request is served")
    func routeLimit() async throws {
        try await withServer({ $0.admitBody = Self.admit }, handler: Self.echo) { _, port in
            let over = try RawClient(port: port)
            over.send("POST /small HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n")
            let refused = await over.receive { $0.contains("}}") }
            #expect(refused.text.hasPrefix("HTTP/1.1 413 "))
            let within = try RawClient(port: port)
            within.send("POST /small HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789")
            #expect(await within.receiveResponses(1).first?.contains("POST /small 10") == true)
            let chunked = try RawClient(port: port)
            chunked.send(
                "POST /small HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n8\r\n01234567\r\n0\r\n\r\n"
            )
            #expect(await chunked.receive { $0.contains("}}") }.text.hasPrefix("HTTP/1.1 413 "))
        }
    }

    @Test("bodies still arriving share one budget: one more is 503 until a body completes")
    func bodyBudget() async throws {
        try await withServer(
            {
                $0.admitBody = Self.admit
                $0.bodyBufferBudget = 1000
            }, handler: Self.echo
        ) { server, port in
            let slow = try RawClient(port: port)
            slow.send("POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 800\r\n\r\nabc")
            #expect(await eventually { server.bufferedBodyByteCount == 800 })
            let refused = try RawClient(port: port)
            refused.send("POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 300\r\n\r\n")
            let busy = await refused.receive { $0.contains("}}") }
            #expect(busy.text.hasPrefix("HTTP/1.1 503 "))
            #expect(busy.text.contains("SERVER_BUSY"))
            slow.send(String(repeating: "x", count: 797))
            #expect(await slow.receiveResponses(1).first?.contains("POST /big 800") == true)
            #expect(server.bufferedBodyByteCount == 0)
            let later = try RawClient(port: port)
            later.send(
                "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 300\r\n\r\n" + String(repeating: "y", count: 300))
            #expect(await later.receiveResponses(1).first?.contains("POST /big 300") == true)
            // A client that goes away mid-body gives its share back.
            let gone = try RawClient(port: port)
            gone.send("POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 900\r\n\r\nabc")
            #expect(await eventually { server.bufferedBodyByteCount == 900 })
            gone.hangUp()
            #expect(await eventually { server.bufferedBodyByteCount == 0 })
        }
    }

    @Test("one peer address holds at most its cap of connections, unless it is exempt")
    func perPeerCap() async throws {
        try await withServer(
            {
                $0.maxConnectionsPerPeer = 2
                $0.loopCount = 1
            }, handler: Self.echo
        ) { server, port in
            let first = try RawClient(port: port)
            let second = try RawClient(port: port)
            #expect(await eventually { server.openConnectionCount == 2 })
            let third = try RawClient(port: port)
            let reply = await third.receive()
            #expect(reply.text.hasPrefix("HTTP/1.1 503 "))
            #expect(reply.text.contains("from this address"))
            first.hangUp()
            #expect(await eventually { server.openConnectionCount == 1 })
            let fourth = try RawClient(port: port)
            fourth.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await fourth.receiveResponses(1).count == 1)
            second.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await second.receiveResponses(1).count == 1)
        }
        try await withServer(
            {
                $0.maxConnectionsPerPeer = 1
                $0.unlimitedPeers = ["127.0.0.1"]
            }, handler: Self.echo
        ) { _, port in
            let clients = try (0..<3).map { _ in try RawClient(port: port) }
            for client in clients { client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n") }
            for client in clients { #expect(await client.receiveResponses(1).count == 1) }
        }
    }

    @Test("a large body's handler starts off the loop threads; a small one's on them")
    func largeBodiesLeaveTheLoop() async throws {
        try await withServer({ $0.offloadBodyBytes = 100 }, handler: Self.echo) { _, port in
            let client = try RawClient(port: port)
            client.send(
                "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n" + String(repeating: "s", count: 100))
            let small = await client.receiveResponses(1).first ?? ""
            #expect(small.contains("sb-http-loop"))
            client.send(
                "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n" + String(repeating: "l", count: 101))
            let large = await client.receiveResponses(1).first ?? ""
            #expect(large.contains("POST /a 101"))
            #expect(!large.contains("sb-http-loop"))
        }
    }
}

/// The calling thread's name, as the kernel keeps it.
private func threadName() -> String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(
        in: .whitespacesAndNewlines) ?? "?"
}
