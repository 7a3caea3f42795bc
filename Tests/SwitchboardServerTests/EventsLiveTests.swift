import Foundation
import Testing
import SwitchboardTesting

/// Register → befriend → message → events, through the real binary over loopback.
@Suite("Accounts, social and events through the binary", .serialized, .timeLimit(.minutes(5)))
struct EventsLiveTests {
    private typealias Account = LiveAccount
    private func json(_ text: String) -> [String: Any] { liveJSON(text) }
    private func register(_ address: String, _ name: String) async throws -> Account {
        try await liveRegister(address, name)
    }
    private func befriend(_ address: String, _ alice: Account, _ bob: Account) async throws -> String {
        try await liveBefriend(address, alice, bob)
    }

    @Test func aMessageWakesTheFriendsHeldLongPoll() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice"), bob = try await register(server.address, "bob")
        let conversation = try await befriend(server.address, alice, bob)
        let me = json(await fetch(server.address, "GET", "/me", headers: bob.auth).body)
        let cursor = try #require(me["eventCursor"] as? Int)

        async let held = fetch(server.address, "GET", "/events?after=\(cursor)&wait=25", headers: bob.auth)
        // The poll is held (its waiter registered) before the message is sent, so only the
        // commit's wake-up can answer it with the message: a poll that times out answers [].
        #expect(await eventually { await liveMetric(server.address, "switchboard_event_waiters") == "1" })
        let sent = await fetch(
            server.address, "POST", "/conversations/\(conversation)/messages", body: #"{"text":"hello bob"}"#,
            headers: alice.auth)
        #expect(sent.status == 201)
        let messageID = try #require(json(sent.body)["id"] as? String)

        let answer = await held
        #expect(answer.status == 200)
        let events = try #require(json(answer.body)["events"] as? [[String: Any]])
        #expect(events.count == 1, "the poll must be woken by the commit, not time out empty")
        #expect(events.first?["kind"] as? String == "message")
        #expect(events.first?["messageId"] as? String == messageID)
        #expect(events.first?["conversationId"] as? String == conversation)
        let history = json(
            await fetch(server.address, "GET", "/conversations/\(conversation)/messages", headers: bob.auth).body)
        #expect((history["messages"] as? [[String: Any]])?.first?["text"] as? String == "hello bob")
    }

    @Test func theStreamResumesAfterAReconnectWithoutLossOrDuplicates() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_EVENT_HEARTBEAT_SECONDS": "1"])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice"), bob = try await register(server.address, "bob")
        let conversation = try await befriend(server.address, alice, bob)
        let port = try #require(Int(server.address.split(separator: ":").last ?? ""))

        func send(_ text: String) async -> String? {
            json(
                await fetch(
                    server.address, "POST", "/conversations/\(conversation)/messages", body: #"{"text":"\#(text)"}"#,
                    headers: alice.auth
                ).body)["id"] as? String
        }
        @Sendable func ids(in text: String) -> [Int] {
            // Split on any newline: "\r\n" (chunk framing) is one Character in Swift.
            text.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("id: ") }.compactMap { Int($0.dropFirst(4)) }
        }

        // First connection: everything so far (friend request, acceptance), then one live message.
        let first = try RawClient(port: port)
        first.send("GET /events/stream?after=0 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(bob.token)\r\n\r\n")
        let opening = await first.receive { ids(in: $0).count >= 2 }
        #expect(opening.text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(opening.text.contains("Content-Type: text/event-stream"))
        #expect(opening.text.contains("retry: 3000"))
        let firstMessage = await send("one")
        let live = await first.receive { $0.contains(firstMessage ?? "-") }
        let seenBefore = ids(in: opening.text + live.text)
        #expect(seenBefore.count == 3)
        // An idle stream carries heartbeats.
        let idle = await first.receive { $0.contains(": heartbeat") }
        #expect(idle.text.contains(": heartbeat"))
        let lastSeen = try #require(seenBefore.last)
        _ = first  // the first connection goes away here
        withExtendedLifetime(first) {}

        // While disconnected: two more messages. Reconnect with Last-Event-ID.
        let missed = [await send("two"), await send("three")]
        let second = try RawClient(port: port)
        second.send(
            "GET /events/stream?after=0 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(bob.token)\r\nLast-Event-ID: \(lastSeen)\r\n\r\n"
        )
        let resumed = await second.receive { text in missed.allSatisfy { text.contains($0 ?? "-") } }
        let seenAfter = ids(in: resumed.text)
        #expect(seenAfter.count == 2, "exactly the two missed events, got \(seenAfter)")
        #expect(seenAfter.allSatisfy { $0 > lastSeen })
        #expect(Set(seenBefore).isDisjoint(with: seenAfter))
        #expect(seenAfter == seenAfter.sorted())
    }

    @Test func logoutEndsAnOpenStreamAtTheNextHeartbeat() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_EVENT_HEARTBEAT_SECONDS": "1"])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice")
        let port = try #require(Int(server.address.split(separator: ":").last ?? ""))
        let client = try RawClient(port: port)
        client.send("GET /events/stream?after=0 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(alice.token)\r\n\r\n")
        #expect(await client.receive { $0.contains(": heartbeat") }.text.contains(": heartbeat"))
        #expect(await fetch(server.address, "POST", "/auth/logout", headers: alice.auth).status == 204)
        // The stream ends cleanly: the terminating chunk arrives within a heartbeat or two.
        @Sendable func ended(_ text: String) -> Bool { text.hasPrefix("0\r\n\r\n") || text.contains("\r\n0\r\n\r\n") }
        let end = await client.receive { ended($0) }
        #expect(ended(end.text))
    }

    @Test func aClientDisconnectFreesItsWaiterAtOnce() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice")
        let port = try #require(Int(server.address.split(separator: ":").last ?? ""))
        @Sendable func waiters() async -> String? { await liveMetric(server.address, "switchboard_event_waiters") }
        var client: RawClient? = try RawClient(port: port)
        client?.send("GET /events?after=0&wait=25 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(alice.token)\r\n\r\n")
        #expect(await eventually { await waiters() == "1" })
        // The poll's own timeout is 25 s after it registered, so at most 25 s after now.
        let registered = ContinuousClock.now
        client = nil  // the socket closes
        // Freed within 20 s: well before the poll's own timeout could free it, and normally in
        // milliseconds. Only a waiter that stays until its timeout runs into this bound.
        #expect(
            await eventually(seconds: 20) { await waiters() == "0" },
            "the waiter must go with the connection, not at its 25 s timeout")
        #expect(ContinuousClock.now - registered < .seconds(25))
        withExtendedLifetime(client) {}
    }

    @Test func sigtermAnswersHeldLongPollsAtOnceInsteadOfWaitingOutTheGrace() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_SHUTDOWN_GRACE_SECONDS": "120"])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice")
        let port = try #require(Int(server.address.split(separator: ":").last ?? ""))
        let client = try RawClient(port: port)
        client.send("GET /events?after=0&wait=25 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(alice.token)\r\n\r\n")
        #expect(await eventually { await liveMetric(server.address, "switchboard_event_waiters") == "1" })
        // The poll would answer by itself 25 s after it registered (at most 25 s from now), and
        // a shutdown that waited for it would exit then, inside its 120 s grace. Stopping within
        // 20 s (normally milliseconds) shows the held poll was answered at once.
        let registered = ContinuousClock.now
        let answer = Task { await client.receive { $0.contains("\"events\":[]") } }
        #expect(await server.terminate(within: 20) == 0, "shutdown must not wait out a held long poll")
        let reply = try await value(of: answer)
        #expect(reply.text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(reply.text.contains(#"{"cursor":0,"events":[]}"#))
        #expect(ContinuousClock.now - registered < .seconds(25))
    }

    @Test func logoutEndsTheSession() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        defer { _ = server.stop() }
        let alice = try await register(server.address, "alice")
        #expect(await fetch(server.address, "GET", "/me", headers: alice.auth).status == 200)
        #expect(await fetch(server.address, "POST", "/auth/logout", headers: alice.auth).status == 204)
        let after = await fetch(server.address, "GET", "/me", headers: alice.auth)
        #expect(after.status == 401)
        #expect(after.body.contains("unknown, ended or expired session"))
        // Logging in again gives a new, working token.
        let login = await fetch(
            server.address, "POST", "/auth/login", body: #"{"username":"ALICE","password":"long enough"}"#)
        #expect(login.status == 200)
        let token = try #require(json(login.body)["token"] as? String)
        #expect(token != alice.token)
        #expect(await fetch(server.address, "GET", "/me", headers: ["Authorization": "Bearer \(token)"]).status == 200)
    }
}
