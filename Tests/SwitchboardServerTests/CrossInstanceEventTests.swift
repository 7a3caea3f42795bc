import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardTesting
import SwitchboardWire

@Suite("Event notices between instances: payloads", .timeLimit(.minutes(1)))
struct EventNoticePayloadTests {
    @Test func usersSpreadOverPayloadsBelowPostgreSQLsLimitAndReadBack() throws {
        let users = (0..<1_000).map { "user-\($0)-\(UUID().uuidString.lowercased())" }
        let payloads = EventNotice.payloads(instance: "instance-a", userIDs: users)
        #expect(payloads.count > 1 && payloads.allSatisfy { $0.utf8.count <= EventNotice.maximumPayloadBytes })
        let parsed = try payloads.map { try #require(EventNotice.parse($0)) }
        #expect(parsed.allSatisfy { $0.instance == "instance-a" })
        let back = parsed.flatMap(\.userIDs)
        #expect(back.count == users.count && back == users)
        #expect(EventNotice.payloads(instance: "a", userIDs: [String]()).isEmpty)
        #expect(EventNotice.parse("v2 a b") == nil && EventNotice.parse("v1") == nil)
    }
}

/// Two instances on one PostgreSQL database (two applications in this process, each with its
/// own hub and listener): a held long poll on one wakes for a commit on the other.
@Suite("Event wake-ups between instances (PostgreSQL)", .timeLimit(.minutes(2)), .enabled(if: TestPostgres.available))
struct CrossInstanceEventTests {
    struct Pair {
        let a: TestApplication
        let b: TestApplication

        init() throws {
            a = try TestApplication(store: .postgres)
            b = try TestApplication(store: .postgres, sharing: a.postgresURL)
        }

        func close() {
            b.close()
            a.close()
        }
    }

    static func register(
        _ name: String, on app: TestApplication
    ) async throws -> (token: String, id: String, cursor: Int64) {
        let response = await app.request(
            "POST", "/auth/register",
            body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
        let session = try JSONDecoder().decode(AuthSession.self, from: Data(response.bodyBytes))
        return (session.token, session.user.id, session.eventCursor)
    }

    /// Bob's poll is held on B (its waiter registered); alice's friend request commits on A.
    static func pollWakes(_ pair: Pair, beforeCommit: @Sendable () async throws -> Void = {}) async throws {
        let alice = try await register("alice", on: pair.a), bob = try await register("bob", on: pair.b)
        let b = pair.b
        let poll = Task {
            await b.request(
                "GET", "/events?after=\(bob.cursor)&wait=25",
                headers: ["Host": "t", "Authorization": "Bearer \(bob.token)"])
        }
        #expect(await eventually { b.application.store.hub.waiterCount == 1 }, "the poll is held on B")
        try await beforeCommit()
        let request = await pair.a.request(
            "POST", "/friend-requests", headers: ["Host": "t", "Authorization": "Bearer \(alice.token)"],
            body: #"{"userId":"\#(bob.id)"}"#)
        #expect(request.status == 201)
        let answer = try await value(of: poll, within: 30)
        let events = answer.json?["events"] as? [[String: Any]] ?? []
        #expect(
            answer.status == 200 && events.compactMap { $0["kind"] as? String } == ["friend_request"],
            "woken, not timed out: \(answer.text)")
    }

    @Test func aLongPollOnOneInstanceWakesForACommitOnAnother() async throws {
        let pair = try Pair()
        defer { pair.close() }
        try await Self.pollWakes(pair)
    }

    /// Another instance's commit whose notice has not arrived yet (written here straight into
    /// the database, with no notice at all), then a commit of this instance's for the same
    /// user: the held poll answers with both, in id order, not just with its own instance's.
    @Test func aLocalCommitDoesNotOvertakeAnotherInstancesEarlierOne() async throws {
        let app = try TestApplication(store: .postgres)
        defer { app.close() }
        let alice = try await Self.register("alice", on: app), bob = try await Self.register("bob", on: app)
        let poll = Task {
            await app.request(
                "GET", "/events?after=\(bob.cursor)&wait=25",
                headers: ["Host": "t", "Authorization": "Bearer \(bob.token)"])
        }
        #expect(await eventually { app.application.store.hub.waiterCount == 1 })
        let other = try PostgresDatabase(
            url: try #require(app.postgresURL), migrations: PostgresSchema.migrations, readerCount: 1)
        defer { other.close() }
        try await other.write { executor in
            try executor.run(
                "INSERT INTO events (user_id, kind, created_at) VALUES (?, 'profile_changed', '2026-12-01T00:00:00.000Z')",
                [.text(bob.id)])
        }
        let request = await app.request(
            "POST", "/friend-requests", headers: ["Host": "t", "Authorization": "Bearer \(alice.token)"],
            body: #"{"userId":"\#(bob.id)"}"#)
        #expect(request.status == 201)
        let answer = try await value(of: poll, within: 30)
        var events = answer.json?["events"] as? [[String: Any]] ?? []
        // On a loaded machine the store's periodic look at other instances' commits can answer
        // the poll with the first event before the local commit lands: then the next poll has
        // the second. Either way nothing is skipped and the order is the ids'.
        if events.count == 1, let last = events.last?["id"] as? Int {
            let next = await app.request(
                "GET", "/events?after=\(last)&wait=25", headers: ["Host": "t", "Authorization": "Bearer \(bob.token)"])
            events += next.json?["events"] as? [[String: Any]] ?? []
        }
        let kinds = events.compactMap { $0["kind"] as? String }
        #expect(kinds == ["profile_changed", "friend_request"], "\(answer.text)")
    }

    /// B's listener loses its connection; the commit's notice is sent while it may be down.
    /// After the listener is back, every held waiter re-reads, so the poll still gets the event.
    @Test func noWakeUpIsLostWhileTheListenerReconnects() async throws {
        let pair = try Pair()
        defer { pair.close() }
        let url = try #require(pair.a.postgresURL)
        try await Self.pollWakes(pair) {
            let admin = try PostgresConnection(url: url)
            defer { admin.close() }
            let ended = try admin.execute(
                "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()"
            )
            // Both instances' listeners end; at least B's did.
            #expect(ended.rows.count >= 1)
        }
    }
}

/// Timers run on every instance: two instances' ring-timeout sweeps wake on the same manual
/// clock for the same call, and the call ends once (the update is conditional on the version
/// it was computed from; the loser re-reads and finds nothing to do).
@Suite("Timers on every instance (PostgreSQL)", .timeLimit(.minutes(2)), .enabled(if: TestPostgres.available))
struct TimersOnEveryInstanceTests {
    @Test func aRingTimesOutOnceThoughEveryInstanceSweeps() async throws {
        let world = try CallWorld(store: .postgres)
        let other = try TestApplication(
            environment: world.clock.environment, store: .postgres, sharing: world.app.postgresURL)
        defer {
            other.close()
            world.close()
        }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(
            await eventually { world.clock.sleeperCount(of: "ring timeout sweep") == 2 },
            "both instances' sweeps sleep on the clock")
        world.clock.advance(seconds: 46)
        #expect(try await eventuallyTrying { try await world.get(call.id, by: alice).endReason == .missed })
        #expect(
            await eventually { world.clock.sleeperCount(of: "ring timeout sweep") == 2 }, "both swept and sleep again")
        let changes = try await world.app.application.store.read { connection in
            try connection.query(
                "SELECT count(*) AS n FROM events WHERE user_id = ? AND call_id = ? AND kind = 'call_changed'",
                [.text(bob.id), .text(call.id)]
            ).first?.int64("n")
        }
        #expect(changes == 2, "rang once, ended once")
    }
}
