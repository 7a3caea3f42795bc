import Foundation
import SwitchboardTesting
import Testing

@testable import SwitchboardPush

/// HTTP2Client against a real HTTP/2 server (Python `h2`) on 127.0.0.1, over TLS with ALPN h2 (as to APNs)
/// unless noted. Serialized: several tests measure time or count connections.
@Suite("HTTP2Client over loopback", .serialized, .timeLimit(.minutes(3)))
struct HTTP2ClientLiveTests {
    @Test("500 concurrent requests complete over one connection")
    func concurrentRequestsShareOneConnection() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))

        let start = ContinuousClock.now
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<500 {
                group.addTask {
                    let body = Array("request \(index)".utf8)
                    let response = try await client.send(HTTP2Request(path: "/echo", body: body))
                    return response.status == 200 && response.body == body ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = seconds(since: start)
        #expect(mismatches == 0)

        let stats = try await serverStats(client)
        #expect(stats.connections == 1, "the server saw \(stats.connections) connections")
        #expect(client.connectionAttempts == 1)
        #expect(client.inFlight == 0)
        print(
            "500 concurrent requests over one connection: \(String(format: "%.2f", elapsed)) s, "
                + "\(Int(500 / elapsed)) requests/s (Python h2 server)")
        await client.shutdown()
    }

    @Test("requests the server holds do not hold back the others, even when they fill every stream")
    func slowRequestsDoNotBlockTheStreamBudget() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        func client(overflow: Int) throws -> HTTP2Client {
            try HTTP2Client(
                configuration: .init(
                    baseURL: server.baseURL, maxConcurrentStreams: 4, overflowConnections: overflow,
                    slowRequestThreshold: .milliseconds(300), requestTimeout: .seconds(30), caFile: server.caFile))
        }
        // Watches the server on a connection of its own (the client's streams will all be taken).
        let observer = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        for overflow in [0, 1] {
            let client = try client(overflow: overflow)
            _ = try await client.send(HTTP2Request(path: "/echo"))
            let baseline = try await serverStats(observer).requests
            let held = (0..<4).map { _ in Task { try await client.send(HTTP2Request(path: "/delay?ms=20000")) } }
            try await waitForServerRequests(observer, 4, since: baseline)  // every stream of the connection is taken
            if overflow == 0 {
                // Strictly one connection: a new request waits for a free stream (here, past its deadline).
                await #expect(throws: HTTP2ClientError.timedOut) {
                    _ = try await client.send(HTTP2Request(path: "/echo", timeout: .seconds(2)))
                }
            } else {
                // The held requests turn slow and the new one goes out on an overflow connection.
                let fast = try await client.send(HTTP2Request(path: "/echo", body: [7]))
                #expect(fast.body == [7])
                #expect(client.inFlight == 4, "the held requests are still waiting")
                #expect(client.connectionAttempts == 2)
            }
            held.forEach { $0.cancel() }
            for task in held { _ = try? await value(of: task) }
            await client.shutdown()
        }
        await observer.shutdown()
    }

    @Test("status, headers and body come back exactly; request headers and body arrive exactly")
    func exactRoundTrip() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))

        let binary = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let apnsID = "8f2a1d3c-0b4e-4f6a-9c7d-1e2f3a4b5c6d"
        let echoed = try await client.send(
            HTTP2Request(path: "/echo?status=410", headers: [("apns-id", apnsID)], body: binary))
        #expect(echoed.status == 410)
        #expect(echoed.headerValue("apns-id") == apnsID)
        #expect(echoed.headerValue("APNS-ID") == apnsID)
        #expect(echoed.headerValue("x-echo-method") == "POST")
        #expect(echoed.headers.allSatisfy { $0.0 == $0.0.lowercased() })
        #expect(echoed.headers.contains { $0 == ("content-length", "1000") })
        #expect(echoed.body == binary)
        #expect(echoed.httpVersion == "2")

        let sentHeaders = [
            ("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.sig"), ("apns-push-type", "voip"),
            ("apns-topic", "com.example.app.voip"), ("x-empty", ""), ("x-twice", "one"), ("X-Twice", "two"),
        ]
        let body = Array(#"{"aps":{},"call_id":"c1"}"#.utf8)
        let inspected = try await client.send(HTTP2Request(path: "/inspect", headers: sentHeaders, body: body))
        let report = try JSONDecoder().decode(InspectReport.self, from: Data(inspected.body))
        #expect(report.method == "POST")
        #expect(report.path == "/inspect")
        #expect(Data(base64Encoded: report.body_b64).map(Array.init) == body)
        let expected = sentHeaders.map { [$0.0.lowercased(), $0.1] } + [["content-length", String(body.count)]]
        #expect(
            report.headers.sorted { $0.lexicographicallyPrecedes($1) }
                == expected.sorted { $0.lexicographicallyPrecedes($1) })

        let get = try await client.send(HTTP2Request(method: "GET", path: "/inspect"))
        let getReport = try JSONDecoder().decode(InspectReport.self, from: Data(get.body))
        #expect(getReport.method == "GET")
        #expect(getReport.headers.isEmpty)
        #expect(getReport.body_b64.isEmpty)

        // Larger than the initial HTTP/2 flow-control window (65,535 bytes).
        let big = try await client.send(HTTP2Request(method: "GET", path: "/big?bytes=300000"))
        #expect(big.body.count == 300_000)
        #expect(big.body.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
        await client.shutdown()
    }

    @Test("the per-request deadline fires and the next request still works")
    func deadlineFires() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(
            configuration: .init(baseURL: server.baseURL, requestTimeout: .milliseconds(400), caFile: server.caFile))
        _ = try await client.send(HTTP2Request(path: "/echo"))

        let start = ContinuousClock.now
        await #expect(throws: HTTP2ClientError.timedOut) {
            _ = try await client.send(HTTP2Request(path: "/delay?ms=5000"))
        }
        // Not before the deadline; the upper bound is the server's 5 s answer, which would have
        // been a success (a busy machine may fire the deadline late, never early).
        let elapsed = seconds(since: start)
        #expect(elapsed >= 0.39, "timed out after \(elapsed) s for a 0.4 s deadline")

        // A per-request deadline overrides the configured one.
        let overrideStart = ContinuousClock.now
        await #expect(throws: HTTP2ClientError.timedOut) {
            _ = try await client.send(HTTP2Request(path: "/delay?ms=5000", timeout: .milliseconds(150)))
        }
        #expect(seconds(since: overrideStart) >= 0.14)

        let next = try await client.send(HTTP2Request(path: "/echo", body: [1, 2, 3]))
        #expect(next.status == 200 && next.body == [1, 2, 3])
        let slowButInTime = try await client.send(HTTP2Request(path: "/delay?ms=100"))
        #expect(slowButInTime.body == Array("late".utf8))
        #expect(client.connectionAttempts == 1, "a timed-out stream must not cost the connection")
        try #require(await eventually { client.liveTransfers == 0 })
        print("deadline 0.4 s fired after \(String(format: "%.3f", elapsed)) s")
        await client.shutdown()
    }

    @Test("malformed requests and configurations are refused before anything is sent")
    func refusesMalformedInput() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        for request in [
            HTTP2Request(path: "/echo", headers: [("x-bad", "a\r\nx-injected: 1")]),
            HTTP2Request(path: "/echo", headers: [("bad name", "v")]),
            HTTP2Request(path: "no-slash"),
            HTTP2Request(method: "GE T", path: "/echo"),
        ] {
            await #expect {
                _ = try await client.send(request)
            } throws: { error in
                if case .invalidRequest = error as? HTTP2ClientError { true } else { false }
            }
        }
        #expect(client.connectionAttempts == 0)
        #expect(throws: HTTP2ClientError.self) { try HTTP2Client(configuration: .init(baseURL: "ftp://example.com")) }
        #expect(throws: HTTP2ClientError.self) {
            try HTTP2Client(configuration: .init(baseURL: server.baseURL, maxConcurrentStreams: 0))
        }
        await client.shutdown()
    }

    @Test("TLS: a client certificate is presented; without it, or without the CA, the connection fails")
    func tlsClientCertificateAndTrust() async throws {
        let server = try H2TestServer(requireClientCertificate: true)
        defer { server.stop() }
        let certificates = try #require(server.certificates)
        let client = try HTTP2Client(
            configuration: .init(
                baseURL: server.baseURL, caFile: server.caFile,
                clientCertificatePEM: certificates.clientCertificate, clientKeyPEM: certificates.clientKey))
        let response = try await client.send(HTTP2Request(path: "/echo", body: [7]))
        #expect(response.status == 200 && response.body == [7] && response.httpVersion == "2")
        await client.shutdown()

        for configuration in [
            HTTP2ClientConfiguration(baseURL: server.baseURL, caFile: server.caFile),  // no client certificate
            HTTP2ClientConfiguration(baseURL: server.baseURL),  // the system store does not trust the server
        ] {
            let failing = try HTTP2Client(configuration: configuration)
            await #expect {
                _ = try await failing.send(HTTP2Request(path: "/echo"))
            } throws: { error in
                if case .connectionFailed = error as? HTTP2ClientError { true } else { false }
            }
            await failing.shutdown()
        }
    }

    @Test("TLS: a server that only speaks HTTP/1.1 is refused with notHTTP2")
    func tlsHTTP1IsRefused() async throws {
        let server = try H2TestServer(http1: true)
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        await #expect(throws: HTTP2ClientError.notHTTP2) { _ = try await client.send(HTTP2Request(path: "/echo")) }
        await client.shutdown()
    }

    @Test("h2c with prior knowledge works (one connection per request on libcurl < 7.89, see CurlGlobal)")
    func h2cPriorKnowledge() async throws {
        let server = try H2TestServer(tls: false)
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL))
        #expect(client.configuration.priorKnowledge)
        for index in 0..<3 {
            let response = try await client.send(HTTP2Request(path: "/echo", body: [UInt8(index)]))
            #expect(response.status == 200 && response.body == [UInt8(index)] && response.httpVersion == "2")
        }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { try await client.send(HTTP2Request(path: "/echo")).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        let expectedConnections = CurlGlobal.priorKnowledgeReuseIsBroken ? 23 : 1
        #expect(client.connectionAttempts == expectedConnections)
        await client.shutdown()
    }

    @Test("10,000 requests: every transfer is freed (RSS figures printed)")
    func tenThousandRequestsKeepMemoryFlat() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        let body = Array(repeating: UInt8(ascii: "x"), count: 256)

        func run(_ count: Int) async throws -> Int {
            try await withThrowingTaskGroup(of: Int.self) { group in
                var ok = 0
                for index in 0..<count {
                    if index >= 100, let status = try await group.next() { ok += status == 200 ? 1 : 0 }
                    group.addTask {
                        try await client.send(
                            HTTP2Request(path: "/echo", headers: [("apns-id", "id-\(index)")], body: body)
                        ).status
                    }
                }
                for try await status in group { ok += status == 200 ? 1 : 0 }
                return ok
            }
        }

        _ = try await run(1000)  // warm-up: allocator pools, connection, caches
        let before = residentKiB()
        let start = ContinuousClock.now
        let ok = try await run(10_000)
        let elapsed = seconds(since: start)
        let after = residentKiB()
        #expect(ok == 10_000)
        #expect(client.connectionAttempts == 1)
        // Every easy handle (with its body copy, header list and error buffer) is freed again. RSS is only printed:
        // it is process-wide, and other suites run in parallel.
        try #require(await eventually { client.liveTransfers == 0 })
        print(
            "10,000 requests (100 in flight, one connection): \(String(format: "%.2f", elapsed)) s, "
                + "\(Int(10_000 / elapsed)) requests/s; RSS \(before) KiB -> \(after) KiB (\(after - before) KiB)")
        await client.shutdown()
    }
}

struct InspectReport: Decodable {
    let method: String
    let path: String
    let headers: [[String]]
    let body_b64: String
}

func serverStats(_ client: HTTP2Client) async throws -> ServerStats {
    let response = try await client.send(HTTP2Request(method: "GET", path: "/stats"))
    return try JSONDecoder().decode(ServerStats.self, from: Data(response.body))
}

/// Waits until the test server has received `count` requests since its count was `baseline`
/// (read by a `/stats` request before they were sent), besides the `/stats` requests this makes
/// (each of which it counts too).
func waitForServerRequests(_ client: HTTP2Client, _ count: Int, since baseline: Int) async throws {
    var polls = 0
    let arrived = await eventually {
        polls += 1
        guard let now = try? await serverStats(client).requests else { return false }
        return now - baseline - polls >= count
    }
    try #require(arrived, "the test server did not receive \(count) requests")
}

/// The most connection probes the reconnect gate allows within `seconds` of downtime: one at
/// once, then one after each pause of 100, 200, 400 … ms.
func maximumProbes(within seconds: Double) -> Int {
    var probes = 1
    var pause = 0.1, waited = 0.1
    while waited <= seconds {
        probes += 1
        pause *= 2
        waited += pause
    }
    return probes
}
