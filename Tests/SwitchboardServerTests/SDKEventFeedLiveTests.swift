import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardTesting
import SwitchboardWire

/// The SDK's API client and event feed against the real server binary.
@Suite("SDK event feed against the binary", .serialized, .timeLimit(.minutes(5)))
struct SDKEventFeedLiveTests {
    private static let environment = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"]

    private func client(_ server: ServerProcess, token: String? = nil) -> SwitchboardClient {
        SwitchboardClient(baseURL: URL(string: "http://\(server.address)")!, token: token)
    }

    /// A port free right now (bind to 0, read it, close).
    private func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func theFeedDeliversEventsAndSavesTheCursorOnlyAfterEachBatch() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: Self.environment)
        defer { _ = server.stop() }
        let anonymous = client(server)
        let alice = try await anonymous.register(username: "alice", password: "long enough", displayName: "Alice")
        let bob = try await anonymous.register(username: "bob", password: "long enough", displayName: "Bob")
        let store = InMemoryCursorStore()
        let feed = EventFeed(client: client(server, token: bob.token), cursorStore: store, startCursor: bob.eventCursor)
        var iterator = feed.makeAsyncIterator()

        let sender = Task {
            // Sent once the feed's first long poll is held, so the event reaches it live.
            let held = await eventually { await liveMetric(server.address, "switchboard_event_waiters") == "1" }
            var request = URLRequest(url: URL(string: "http://\(server.address)/friend-requests")!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(alice.token)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"userId":"\#(bob.user.id)"}"#.utf8)
            _ = try await URLSessionTransport().send(request)
            return held
        }
        let first = try await iterator.next()
        guard case .events(let events)? = first else {
            Issue.record("expected events, got \(String(describing: first))")
            return
        }
        #expect(events.map(\.kind) == [.friendRequest])
        #expect(await store.load() == nil, "not saved while the app is still handling the batch")
        #expect(try await value(of: sender), "the feed's first poll was never held")

        // Asking for more means the batch was handled: the cursor is saved, then it waits.
        let next = Task { [iterator] in
            var iterator = iterator
            return try await iterator.next()
        }
        let saved = events.last?.id
        #expect(await eventually { await store.load() == saved })
        next.cancel()
        _ = try? await value(of: next)
    }

    @Test func anEndedSessionEndsTheFeed() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: Self.environment)
        defer { _ = server.stop() }
        let session = try await client(server).register(
            username: "carol", password: "long enough", displayName: "Carol")
        let signedIn = client(server, token: session.token)
        try await signedIn.logout()
        var updates: [EventFeedUpdate] = []
        for try await update in EventFeed(
            client: signedIn, cursorStore: InMemoryCursorStore(), startCursor: 0, sleep: { _ in })
        {
            updates.append(update)
        }
        #expect(updates == [.sessionEnded])
        do {
            _ = try await signedIn.me()
            Issue.record("an ended session must be refused")
        } catch let error as SwitchboardAPIError {
            #expect(error.status == 401 && error.code == .unauthorized)
        }
    }

    @Test func theFeedRidesOutAServerRestartAndContinuesFromItsCursor() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let port = freePort()
        let arguments = ["--listen", "127.0.0.1:\(port)", "--data-dir", data.path]
        var server = try await ServerProcess.launch(arguments: arguments, environment: Self.environment)
        let firstServer = server
        defer { _ = firstServer.stop() }
        let anonymous = client(server)
        let alice = try await anonymous.register(username: "alice", password: "long enough", displayName: "Alice")
        let bob = try await anonymous.register(username: "bob", password: "long enough", displayName: "Bob")
        let store = InMemoryCursorStore()
        let retries = Mutex(0)
        let feed = EventFeed(
            client: client(server, token: bob.token), cursorStore: store, startCursor: bob.eventCursor,
            sleep: { _ in
                retries.withLock { $0 += 1 }
                try await Task.sleep(for: .milliseconds(100))
            })
        let delivered = Mutex<[String]>([])
        let collected = Task {
            var kinds: [String] = []
            for try await update in feed {
                if case .events(let events) = update { kinds += events.map(\.kind.rawValue) }
                delivered.withLock { $0 = kinds }
                if kinds.count >= 2 { break }
            }
            return kinds
        }
        @Sendable func befriendRequest(_ address: String) async throws {
            var request = URLRequest(url: URL(string: "http://\(address)/friend-requests")!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(alice.token)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"userId":"\#(bob.user.id)"}"#.utf8)
            _ = try await URLSessionTransport().send(request)
        }
        // Event 1, delivered live: sent once the feed's long poll is held, and seen before the stop.
        #expect(await eventually { await liveMetric(firstServer.address, "switchboard_event_waiters") == "1" })
        try await befriendRequest(server.address)
        #expect(await eventually { delivered.withLock { $0 } == ["friend_request"] })
        #expect(await server.terminate() == 0)
        // While no server runs the feed's polls fail and it retries.
        #expect(await eventually { retries.withLock { $0 } >= 1 })
        server = try await ServerProcess.launch(arguments: arguments, environment: Self.environment)
        defer { _ = server.stop() }
        // Bob declines the request: a second friend_request event for him, after the restart.
        var cancel = URLRequest(url: URL(string: "http://\(server.address)/friend-requests")!)
        cancel.setValue("Bearer \(bob.token)", forHTTPHeaderField: "Authorization")
        let list = try JSONDecoder().decode(
            FriendRequestList.self, from: try await URLSessionTransport().send(cancel).0)
        let requestID = try #require(list.incoming.first?.id)
        var decline = URLRequest(url: URL(string: "http://\(server.address)/friend-requests/\(requestID)/decline")!)
        decline.httpMethod = "POST"
        decline.setValue("Bearer \(bob.token)", forHTTPHeaderField: "Authorization")
        _ = try await URLSessionTransport().send(decline)  // event 2 for Bob (and Alice)
        #expect(await eventually { delivered.withLock { $0.count } >= 2 })
        collected.cancel()  // ends the feed if the second event never came
        let kinds = (try? await value(of: collected)) ?? delivered.withLock { $0 }
        #expect(kinds == ["friend_request", "friend_request"])
        #expect(retries.withLock { $0 } >= 1, "the restart must have been ridden out by retries")
    }
}
