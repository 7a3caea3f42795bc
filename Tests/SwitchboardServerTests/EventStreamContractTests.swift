import Foundation
import Synchronization
import Testing
import SwitchboardStore
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardTesting
import SwitchboardWire

/// A clock tests move by hand.
private final class MovableNow: Sendable {
    private let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { value.withLock { $0 } }
    func advance(days: Double) { value.withLock { $0 = $0.addingTimeInterval(days * 86_400) } }
}

private func signUp(_ app: TestApplication, _ name: String) async throws -> (token: String, id: String) {
    let response = await app.request(
        "POST", "/auth/register", body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
    let session = try JSONDecoder().decode(AuthSession.self, from: Data(response.bodyBytes))
    return (session.token, session.user.id)
}

private func headers(_ token: String) -> HTTPHeaders { ["Host": "t", "Authorization": "Bearer \(token)"] }

/// Appends `count` events for a user straight through the store (the feed does not care which
/// service wrote them).
private func appendEvents(
    _ app: TestApplication, to userID: String, count: Int, kind: String = "test_kind"
) async throws {
    _ = try await app.application.store.write { transaction in
        for _ in 0..<count { try transaction.appendEvent(EventKind(rawValue: kind), to: [userID]) }
    }
}

private func page(_ response: HTTPResponse) throws -> EventsPage {
    try JSONDecoder().decode(EventsPage.self, from: Data(response.bodyBytes))
}

@Suite("Event stream contract (SPEC §2)", .timeLimit(.minutes(3)))
struct EventStreamContractTests {
    @Test(arguments: [
        "after=-1", "after=9007199254740992", "after=99999999999999999", "after=abc", "after=", "after=1.5",
        "after=%2B1", "after=%201", "after=0x10", "after=0&wait=26", "after=0&wait=-1", "after=0&wait=1.5",
        "after=0&wait=", "after=0&wait=abc", "wait=5",
    ])
    func invalidParametersAre400(query: String) async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        let response = await app.request("GET", "/events?\(query)", headers: headers(alice.token))
        #expect(response.status == 400)
        let error = response.json?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "VALIDATION_FAILED")
        #expect(["after", "wait"].contains(error?["field"] as? String))
    }

    @Test(arguments: [
        "after=0", "after=0&wait=0", "after=0&wait=25", "after=00&wait=7", "after=9007199254740991&wait=0",
    ])
    func boundaryValuesAreAccepted(query: String) async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        try await appendEvents(app, to: alice.id, count: 1)  // so a long wait answers at once
        let response = await app.request("GET", "/events?\(query)", headers: headers(alice.token))
        #expect(response.status == 200)
        let expected = query.hasPrefix("after=9007199254740991") ? 0 : 1
        #expect(try page(response).events.count == expected)
    }

    /// Past `batchThreshold` users the rows are written by one statement (`json_each` +
    /// `RETURNING`): still one event per user (duplicates dropped), ids in the order given, and
    /// each waiter woken with its own row.
    @Test func aWriteToManyUsersGivesEachOneEventInTheGivenOrderAndWakesTheirWaiters() async throws {
        let app = try TestApplication()
        defer { app.close() }
        var users: [(token: String, id: String)] = []
        for index in 0..<20 { users.append(try await signUp(app, "user\(index)")) }
        #expect(users.count > SQLEventRepository.batchThreshold)
        let hub = app.application.store.hub
        let waiter = hub.register(userID: users[7].id, timeout: .seconds(60))
        defer { hub.release(waiter) }
        let recipients = users.map(\.id) + [users[0].id]
        _ = try await app.application.store.write { transaction in
            try transaction.appendEvent(
                EventKind(rawValue: "batch_kind"), to: recipients, groupID: "g1", messageID: "m1")
        }
        var ids: [Int64] = []
        for user in users {
            let events = try page(await app.request("GET", "/events?after=0&wait=0", headers: headers(user.token)))
                .events.filter { $0.kind.rawValue == "batch_kind" }
            #expect(events.count == 1)
            #expect(events.first?.groupId == "g1" && events.first?.messageId == "m1" && events.first?.callId == nil)
            ids.append(events.first?.id ?? -1)
        }
        #expect(ids == ids.sorted() && Set(ids).count == users.count)
        let reason = await hub.wait(waiter)
        guard case .notified(let woken, let previous) = reason else {
            Issue.record("user 7's waiter was not woken")
            return
        }
        #expect(woken.map(\.id) == [ids[7]])
        // User 7's events before this write (signing up wrote none); on SQLite always 0.
        #expect(previous < ids[7])
    }

    @Test func withoutATokenIs401() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("GET", "/events?after=0&wait=0")
        #expect(response.status == 401)
        #expect((response.json?["error"] as? [String: Any])?["code"] as? String == "UNAUTHORIZED")
        let ended = await app.request(
            "GET", "/events?after=0&wait=0", headers: headers(String(repeating: "A", count: 43)))
        #expect(ended.status == 401)
    }

    @Test func emptyBatchReturnsCursorEqualToAfter() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        let response = await app.request("GET", "/events?after=12345&wait=0", headers: headers(alice.token))
        let result = try page(response)
        #expect(result.events.isEmpty)
        #expect(result.cursor == 12345)
        // And on a timed-out wait too.
        let waited = try page(await app.request("GET", "/events?after=77&wait=1", headers: headers(alice.token)))
        #expect(waited.events.isEmpty)
        #expect(waited.cursor == 77)
    }

    @Test func twoHundredFiftyEventsComeBackAs100Then100Then50InOrder() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        try await appendEvents(app, to: alice.id, count: 250)
        var cursor: Int64 = 0
        var sizes: [Int] = []
        var seen: [Int64] = []
        for _ in 0..<4 {
            let result = try page(
                await app.request("GET", "/events?after=\(cursor)&wait=0", headers: headers(alice.token)))
            sizes.append(result.events.count)
            seen += result.events.map(\.id)
            #expect(result.cursor == (result.events.last?.id ?? cursor))
            cursor = result.cursor
        }
        #expect(sizes == [100, 100, 50, 0])
        #expect(seen == seen.sorted())
        #expect(Set(seen).count == 250)
    }

    @Test func answersAtOnceWhenEventsExist() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        try await appendEvents(app, to: alice.id, count: 1)
        let started = ContinuousClock.now
        let result = try page(await app.request("GET", "/events?after=0&wait=25", headers: headers(alice.token)))
        #expect(result.events.count == 1)
        // Normally milliseconds; the bound only tells an answer at once from one after the wait.
        #expect(ContinuousClock.now - started < .seconds(20), "answered after the 25 s wait, not at once")
    }

    @Test func eachUserSeesOnlyTheirOwnEventsWithOneGlobalSequence() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice"), bob = try await signUp(app, "bob")
        try await appendEvents(app, to: alice.id, count: 3, kind: "for_alice")
        try await appendEvents(app, to: bob.id, count: 2, kind: "for_bob")
        try await appendEvents(app, to: alice.id, count: 1, kind: "for_alice")
        let a = try page(await app.request("GET", "/events?after=0&wait=0", headers: headers(alice.token))).events
        let b = try page(await app.request("GET", "/events?after=0&wait=0", headers: headers(bob.token))).events
        #expect(a.map(\.kind.rawValue) == Array(repeating: "for_alice", count: 4))
        #expect(b.map(\.kind.rawValue) == ["for_bob", "for_bob"])
        #expect(Set(a.map(\.id)).isDisjoint(with: b.map(\.id)))
        // Strictly increasing across users: Bob's events sit between Alice's third and fourth.
        #expect(a[2].id < b[0].id && b[1].id < a[3].id)
    }

    @Test func referencesThatDoNotApplyAreJSONNull() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        try await appendEvents(app, to: alice.id, count: 1)
        let response = await app.request("GET", "/events?after=0&wait=0", headers: headers(alice.token))
        let event = try #require((response.json?["events"] as? [[String: Any]])?.first)
        for key in ["conversationId", "groupId", "messageId", "callId"] {
            #expect(event.keys.contains(key), "\(key) must be present")
            #expect(event[key] is NSNull, "\(key) must be null")
        }
    }

    @Test func aHeldPollIsWokenByTheCommitNotByItsTimeout() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        let poll = Task { await app.request("GET", "/events?after=0&wait=25", headers: headers(alice.token)) }
        #expect(await eventually { app.application.store.hub.waiterCount == 1 })
        try await appendEvents(app, to: alice.id, count: 1)
        let result = try page(try await value(of: poll))
        // A poll that timed out would answer with no events: one event means the commit woke it.
        #expect(result.events.count == 1)
        #expect(app.application.store.hub.waiterCount == 0)
    }

    @Test func anotherUsersEventDoesNotWakeTheWaiter() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice"), bob = try await signUp(app, "bob")
        let poll = Task { await app.request("GET", "/events?after=0&wait=25", headers: headers(alice.token)) }
        #expect(await eventually { app.application.store.hub.waiterCount == 1 })
        try await appendEvents(app, to: bob.id, count: 1, kind: "for_bob")
        // Alice's own event comes after Bob's: had Bob's woken her waiter, the poll would have
        // answered already, with Bob's event or with nothing.
        try await appendEvents(app, to: alice.id, count: 1, kind: "for_alice")
        let result = try page(try await value(of: poll))
        #expect(result.events.map(\.kind.rawValue) == ["for_alice"])
    }

    /// The race the second query closes: an event committed after the first query but before
    /// the waiter exists wakes nobody, so only the second query can find it.
    @Test func theSecondQueryCatchesAnEventCommittedBeforeTheWaiterExisted() async throws {
        let holder = Mutex<TestApplication?>(nil)
        let alice = Mutex<String?>(nil)
        let app = try TestApplication(
            eventHooks: EventRoutes.Hooks(afterFirstQuery: {
                guard let app = holder.withLock({ $0 }), let id = alice.withLock({ $0 }) else { return }
                try? await appendEvents(app, to: id, count: 1, kind: "raced")
            }))
        defer { app.close() }
        holder.withLock { $0 = app }
        let user = try await signUp(app, "alice")
        alice.withLock { $0 = user.id }
        // wait=3: without the second query this would time out and come back empty.
        let result = try page(await app.request("GET", "/events?after=0&wait=3", headers: headers(user.token)))
        #expect(result.events.map(\.kind.rawValue) == ["raced"])
    }

    @Test func aCancelledRequestReleasesItsWaiterAtOnce() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        let poll = Task { await app.request("GET", "/events?after=0&wait=25", headers: headers(alice.token)) }
        #expect(await eventually { app.application.store.hub.waiterCount == 1 })
        let started = ContinuousClock.now
        poll.cancel()
        _ = try await value(of: poll)
        // Normally milliseconds; the bound only tells a release at once from one at the timeout.
        #expect(ContinuousClock.now - started < .seconds(20), "released at the 25 s timeout, not at once")
        #expect(app.application.store.hub.waiterCount == 0)
    }

    @Test func aCursorBeforeTheRetentionWindowIs410() async throws {
        let clock = MovableNow()
        let app = try TestApplication(
            environment: ServerEnvironment(now: { clock.now }, newID: { UUID().uuidString.lowercased() }))
        defer { app.close() }
        let alice = try await signUp(app, "alice"), bob = try await signUp(app, "bob")
        try await appendEvents(app, to: alice.id, count: 3)
        clock.advance(days: 20)
        try await appendEvents(app, to: alice.id, count: 2)
        clock.advance(days: 15)  // the first three are now 35 days old, the last two 15
        // The application's own start-up prune may run late (after the clock moved) and get there
        // first: assert what is left, not who deleted it.
        _ = try await app.application.pruneEvents()
        let left = try await app.application.store.read {
            try $0.query("SELECT count(*) AS n FROM events WHERE user_id = ?", [.text(alice.id)]).first?.int("n")
        }
        #expect(left == 2)

        let expired = await app.request("GET", "/events?after=0&wait=0", headers: headers(alice.token))
        #expect(expired.status == 410)
        #expect((expired.json?["error"] as? [String: Any])?["code"] as? String == "CURSOR_EXPIRED")
        #expect(await app.request("GET", "/events/stream?after=2", headers: headers(alice.token)).status == 410)

        // A fresh snapshot's cursor works, and a cursor at the last pruned id still sees the rest.
        let me = try JSONDecoder().decode(
            Me.self, from: Data(await app.request("GET", "/me", headers: headers(alice.token)).bodyBytes))
        #expect(
            try page(await app.request("GET", "/events?after=\(me.eventCursor)&wait=0", headers: headers(alice.token)))
                .events.isEmpty)
        let rest = try page(await app.request("GET", "/events?after=3&wait=0", headers: headers(alice.token)))
        #expect(rest.events.count == 2)
        // Another user had nothing pruned: cursor 0 is still fine for them.
        #expect(await app.request("GET", "/events?after=0&wait=0", headers: headers(bob.token)).status == 200)
    }

    @Test func meCursorSurvivesPruningEverything() async throws {
        let clock = MovableNow()
        let app = try TestApplication(
            environment: ServerEnvironment(now: { clock.now }, newID: { UUID().uuidString.lowercased() }))
        defer { app.close() }
        let alice = try await signUp(app, "alice")
        try await appendEvents(app, to: alice.id, count: 4)
        clock.advance(days: 31)
        _ = try await app.application.pruneEvents()
        let left = try await app.application.store.read {
            try $0.query("SELECT count(*) AS n FROM events WHERE user_id = ?", [.text(alice.id)]).first?.int("n")
        }
        #expect(left == 0)
        let me = try JSONDecoder().decode(
            Me.self, from: Data(await app.request("GET", "/me", headers: headers(alice.token)).bodyBytes))
        #expect(me.eventCursor >= 4)
        #expect(
            await app.request("GET", "/events?after=\(me.eventCursor)&wait=0", headers: headers(alice.token)).status
                == 200)
    }
}

@Suite("Event JSON fast path", .timeLimit(.minutes(3)))
struct EventJSONTests {
    /// The hand-written encoder must produce exactly what JSONEncoder (sorted keys) does.
    @Test func matchesJSONEncoderByteForByte() throws {
        let events = [
            Event(
                id: 1, kind: .message, conversationId: "c\"1", groupId: nil, messageId: "m\\1", callId: nil,
                createdAt: "2026-11-30T04:50:45.535Z"),
            Event(
                id: 9_007_199_254_740_991, kind: EventKind(rawValue: "call_changed\n"), callId: "ü-☎️",
                createdAt: "t\u{01}"),
        ]
        let expected = try JSONBody.makeEncoder().encode(EventsPage(events: events, cursor: 42))
        #expect(EventJSON.page(events, cursor: 42) == Array(expected))
        #expect(
            EventJSON.page([], cursor: 7) == Array(try JSONBody.makeEncoder().encode(EventsPage(events: [], cursor: 7)))
        )
        #expect(Array(EventJSON.event(events[0]).utf8) == Array(try JSONBody.makeEncoder().encode(events[0])))
    }
}
