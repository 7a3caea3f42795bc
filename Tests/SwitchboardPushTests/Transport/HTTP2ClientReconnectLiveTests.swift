import Foundation
import SwitchboardTesting
import Testing

@testable import SwitchboardPush

// HTTP2Client's connections coming and going — a restart, an unreachable server, GOAWAY,
// cancellation, shutdown, release — in the same serialized suite as the round-trip tests
// (`HTTP2ClientLiveTests`): several of them count connections or measure time.
extension HTTP2ClientLiveTests {
    @Test("a server restart: in-flight requests fail, attempts stay bounded while down, later requests succeed")
    func reconnectsAfterRestartWithoutTightLoop() async throws {
        var server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(
            configuration: .init(
                baseURL: server.baseURL, requestTimeout: .seconds(10), connectTimeout: .seconds(2),
                caFile: server.caFile))
        #expect(try await client.send(HTTP2Request(path: "/echo")).status == 200)
        let baseline = try await serverStats(client).requests

        // Requests in flight when the server dies fail promptly with a connection error.
        let inFlight = Task {
            try await withThrowingTaskGroup(of: HTTP2ClientError?.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        do {
                            _ = try await client.send(HTTP2Request(path: "/delay?ms=5000"))
                            return nil
                        } catch let error as HTTP2ClientError { return error }
                    }
                }
                return try await group.reduce(into: [HTTP2ClientError?]()) { $0.append($1) }
            }
        }
        try #require(await eventually { client.inFlight == 5 })
        try await waitForServerRequests(client, 5, since: baseline)  // the five reached the server
        server.stop()
        // They fail with a connection error, not at their 10 s deadline.
        let inFlightErrors = try await value(of: inFlight)
        #expect(
            inFlightErrors.allSatisfy { if case .connectionFailed = $0 { true } else { false } }, "\(inFlightErrors)")

        // One second of downtime with steady demand: 20 queued requests plus a new one every 20 ms.
        let attemptsBefore = client.connectionAttempts
        let downStart = ContinuousClock.now
        let queued = (0..<20).map { _ in Task { try await client.send(HTTP2Request(path: "/echo")) } }
        var trickle: [Task<HTTP2Response, any Error>] = []
        while seconds(since: downStart) < 1.0 {
            trickle.append(Task { try await client.send(HTTP2Request(path: "/echo")) })
            try await Task.sleep(for: .milliseconds(20))
        }
        let attemptsWhileDown = client.connectionAttempts - attemptsBefore
        let downFor = seconds(since: downStart)
        print(
            "connection attempts during \(String(format: "%.2f", downFor)) s of downtime with \(20 + trickle.count) requests waiting: \(attemptsWhileDown)"
        )
        // Backoff 100, 200, 400, 800 ms...: within the downtime the loop measured (longer on a
        // busy machine, which only allows more), a tight loop would make hundreds.
        let allowed = maximumProbes(within: downFor)
        #expect(
            attemptsWhileDown >= 1 && attemptsWhileDown <= allowed,
            "attempts while down: \(attemptsWhileDown), allowed \(allowed)")

        server = try server.restarted()
        let upAt = ContinuousClock.now
        let after = try await client.send(HTTP2Request(path: "/echo", body: [42]))
        #expect(after.body == [42])
        var succeeded = 0
        var failures: [String] = []
        for task in queued + trickle {
            do {
                _ = try await value(of: task)
                succeeded += 1
            } catch HTTP2ClientError.connectionFailed {
                failures.append("connectionFailed")  // a probe that met the closed port
            } catch {
                failures.append("\(error)")
            }
        }
        print(
            "back up after \(String(format: "%.2f", seconds(since: upAt))) s; \(succeeded) queued requests "
                + "succeeded, \(failures.count) probes failed")
        #expect(
            failures.count <= attemptsWhileDown + 1 && failures.allSatisfy { $0 == "connectionFailed" }, "\(failures)")
        #expect(succeeded >= queued.count + trickle.count - failures.count)
        let stats = try await serverStats(client)
        #expect(stats.connections == 1, "everything after the restart shares one new connection")
        await client.shutdown()
    }

    @Test("within a push attempt's window: requests held for a connection come back unsent, none outlives its window")
    func windowedRequestsHeldForAConnectionComeBackUnsent() async throws {
        var server = try H2TestServer()
        defer { server.stop() }
        // A long first pause after a failure, so the windowed requests below surely arrive while
        // the gate holds everything.
        let client = try HTTP2Client(
            configuration: .init(
                baseURL: server.baseURL, requestTimeout: .seconds(10), connectTimeout: .seconds(2),
                caFile: server.caFile, reconnectInitialDelay: .seconds(4)))
        // The first connection's set-up is no outage: windowed requests that wait for it go out.
        let firsts = (0..<3).map { _ in RequestWindow(deadline: .now + .seconds(30)) }
        let statuses = await withTaskGroup(of: Int.self) { group in
            for window in firsts {
                group.addTask {
                    (try? await window.withValue { try await client.send(HTTP2Request(path: "/echo")) })?.status ?? 0
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200] && !firsts.contains { $0.wasHeldBack })

        // A window ends a request sooner than its own timeout.
        let short = RequestWindow(deadline: .now + .milliseconds(500))
        let started = ContinuousClock.now
        await #expect(throws: HTTP2ClientError.timedOut) {
            try await short.withValue { try await client.send(HTTP2Request(path: "/delay?ms=8000")) }
        }
        #expect(seconds(since: started) < 6, "the window's 0.5 s, not the request's 10 s")
        #expect(!short.wasHeldBack)

        server.stop()
        // The first request after the stop meets the closed port: the gate closes for 4 s.
        await #expect(throws: (any Error).self) { try await client.send(HTTP2Request(path: "/echo")) }
        let windows = (0..<3).map { _ in RequestWindow(deadline: .now + .seconds(30)) }
        let outcomes = await withTaskGroup(of: String.self) { group in
            for window in windows {
                group.addTask {
                    do {
                        _ = try await window.withValue { try await client.send(HTTP2Request(path: "/echo")) }
                        return "sent"
                    } catch let error as HTTP2ClientError {
                        return error.code
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        // Handed back one at a time when the gate lets a probe through (a second apart, as no
        // sender here sends its request again as the probe), none of them sent.
        #expect(outcomes == ["held_for_connection", "held_for_connection", "held_for_connection"], "\(outcomes)")
        #expect(windows.allSatisfy { $0.wasHeldBack })

        // Back up: a windowed request goes straight out.
        server = try server.restarted()
        let after = RequestWindow(deadline: .now + .seconds(30))
        var status = 0
        for _ in 0..<20 where status != 200 {
            // The first may still meet the gate's pause or probe; it is handed back or fails, and goes again.
            status = (try? await after.withValue { try await client.send(HTTP2Request(path: "/echo")) })?.status ?? 0
            if status != 200 { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(status == 200)
        await client.shutdown()
    }

    @Test("an unreachable server gets a bounded number of connection attempts")
    func unreachableServerBacksOff() async throws {
        let port = try H2TestServer(tls: false).port  // started and stopped (deinit): nothing listens there now
        let client = try HTTP2Client(
            configuration: .init(baseURL: "http://127.0.0.1:\(port)", requestTimeout: .milliseconds(1200)))
        let start = ContinuousClock.now
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        _ = try await client.send(HTTP2Request(path: "/echo"))
                        return "ok"
                    } catch let error as HTTP2ClientError {
                        return error.code
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        let elapsed = seconds(since: start)
        print(
            "unreachable: \(client.connectionAttempts) connection attempts for 50 requests in "
                + "\(String(format: "%.2f", elapsed)) s: \(outcomes)")
        // One probe at 0 s, then after 100, 200 and 400 ms pauses: at most 4 within the 1.2 s
        // deadlines (the bound is taken from the time that really passed, in case the machine is slow).
        #expect(client.connectionAttempts >= 1 && client.connectionAttempts <= min(4, maximumProbes(within: elapsed)))
        #expect(outcomes["connection_failed", default: 0] == client.connectionAttempts)
        #expect(outcomes["timed_out", default: 0] == 50 - client.connectionAttempts)
        await client.shutdown()
    }

    @Test("GOAWAY: the next requests open one new connection and succeed")
    func goawayReconnects() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        let bye = try await client.send(HTTP2Request(path: "/goaway"))
        #expect(bye.body == Array("bye".utf8))
        // Wait until the server has closed that connection (the stats request opens the second one).
        try #require(await eventually { (try? await serverStats(client).open) == 1 })
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { try await client.send(HTTP2Request(path: "/echo")).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(client.connectionAttempts == 2)
        let stats = try await serverStats(client)
        #expect(stats.connections == 2)
        await client.shutdown()
    }

    @Test("cancelling the calling task resets its stream and keeps the connection")
    func cancellationCancelsRequest() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        _ = try await client.send(HTTP2Request(path: "/echo"))
        let baseline = try await serverStats(client).requests

        let task = Task { try await client.send(HTTP2Request(path: "/delay?ms=5000")) }
        try #require(await eventually { client.inFlight == 1 })
        try await waitForServerRequests(client, 1, since: baseline)  // on the wire, so cancelling it must reset the stream
        task.cancel()
        // At once, not when the server's answer comes 5 s later (the stream is reset).
        await #expect(throws: CancellationError.self) { _ = try await value(of: task) }
        #expect(client.inFlight == 0)
        try #require(await eventually { client.liveTransfers == 0 })

        // Cancelled before it was even submitted.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(HTTP2Request(path: "/echo"))
        }
        await #expect(throws: CancellationError.self) { _ = try await value(of: early) }

        try #require(await eventually { (try? await serverStats(client).resets) ?? 0 >= 1 })
        #expect(try await client.send(HTTP2Request(path: "/echo")).status == 200)
        #expect(client.connectionAttempts == 1)
        await client.shutdown()
    }

    @Test("shutdown fails queued and in-flight requests, refuses new ones, and ends the loop thread")
    func shutdownEndsEverything() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        // Two streams at most: of six slow requests, two are on the wire and four wait in the client's queue.
        let client = try HTTP2Client(
            configuration: .init(baseURL: server.baseURL, maxConcurrentStreams: 2, caFile: server.caFile))
        _ = try await client.send(HTTP2Request(path: "/echo"))
        let threadID = try #require(client.loopThreadID)
        #expect(threadExists(threadID))

        let tasks = (0..<6).map { _ in Task { try await client.send(HTTP2Request(path: "/delay?ms=5000")) } }
        try #require(await eventually { client.inFlight == 6 })
        await client.shutdown()
        for task in tasks {
            await #expect(throws: HTTP2ClientError.shutdown) { _ = try await value(of: task) }
        }
        #expect(client.inFlight == 0)
        #expect(client.liveTransfers == 0, "the loop freed every handle before the thread ended")
        await #expect(throws: HTTP2ClientError.shutdown) { _ = try await client.send(HTTP2Request(path: "/echo")) }
        try #require(await eventually { !threadExists(threadID) })
        await client.shutdown()  // idempotent
    }

    @Test("a client released without shutdown() still stops its thread")
    func releasedClientStopsThread() async throws {
        let server = try H2TestServer()
        defer { server.stop() }
        var client: HTTP2Client? = try HTTP2Client(configuration: .init(baseURL: server.baseURL, caFile: server.caFile))
        #expect(try await client?.send(HTTP2Request(path: "/echo")).status == 200)
        let threadID = try #require(client?.loopThreadID)
        client = nil
        try #require(await eventually { !threadExists(threadID) })
    }
}
