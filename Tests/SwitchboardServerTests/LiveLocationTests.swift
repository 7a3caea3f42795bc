import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardCore
import SwitchboardTesting
import SwitchboardWire

/// Live location (SPEC §9) over the in-process application on the manual clock, on the store
/// the run names (`make test` runs it on SQLite and on PostgreSQL).
@Suite("Live location", .timeLimit(.minutes(3)))
struct LiveLocationTests {
    static let position = #"{"latitude":52.52,"longitude":13.405,"accuracy":25}"#

    /// One world: Olivia and Max friends (their conversation), Sam a stranger, a group of
    /// Olivia (owner), Max and Ann.
    struct Fixture {
        let world: CallWorld
        let olivia: CallWorld.Person, max: CallWorld.Person, ann: CallWorld.Person, sam: CallWorld.Person
        let conversation: String
        let group: String

        init() async throws {
            world = try CallWorld()
            olivia = try await world.person("olivia")
            max = try await world.person("max")
            ann = try await world.person("ann")
            sam = try await world.person("sam")
            conversation = try await world.befriend(olivia, max)
            group = try await world.group(olivia, [max, ann])
        }

        func request(
            _ person: CallWorld.Person, _ method: String, _ path: String, _ body: String = ""
        ) async -> HTTPResponse {
            await world.app.request(method, path, headers: person.headers, body: body)
        }

        func share(
            _ person: CallWorld.Person, _ path: String, _ body: String = LiveLocationTests.position
        ) async throws -> LiveLocation {
            let response = await request(person, "POST", path, body)
            try #require([200, 201].contains(response.status), "start: \(response.status) \(response.text)")
            return try JSONDecoder().decode(LiveLocation.self, from: Data(response.bodyBytes))
        }

        func list(_ person: CallWorld.Person, _ path: String) async throws -> [LiveLocation] {
            let response = await request(person, "GET", path)
            try #require(response.status == 200, "list: \(response.status) \(response.text)")
            return try JSONDecoder().decode(LiveLocationList.self, from: Data(response.bodyBytes)).liveLocations
        }

        /// The kinds of `person`'s events after `after`, and the newest id.
        func liveEvents(_ person: CallWorld.Person, after: Int64) async throws -> (events: [Event], cursor: Int64) {
            let events = try await world.events(of: person, after: after)
            return (events.filter { $0.kind == EventKind.liveLocationChanged }, events.last?.id ?? after)
        }

        func cursor(_ person: CallWorld.Person) async throws -> Int64 {
            try await world.events(of: person).last?.id ?? 0
        }

        /// Advances the clock once the expiry sweep sleeps on it: a sweep still running when the
        /// clock moves would sleep a whole interval from the new time, past the moment the test
        /// means it to wake at.
        func advanceWithTheSweepAsleep(seconds: Double) async throws {
            try #require(
                await eventually { world.clock.sleeperCount(of: "live location expiry") == 1 },
                "the expiry sweep sleeps on the clock")
            world.clock.advance(seconds: seconds)
        }

        var conversationPath: String { "/conversations/\(conversation)/live-locations" }
        var groupPath: String { "/groups/\(group)/live-locations" }
        func close() { world.close() }
    }

    // MARK: Validation, case by case

    struct BadBody: Sendable, CustomTestStringConvertible {
        let body: String
        let field: String?
        var testDescription: String { body }
    }

    static let badBodies: [BadBody] = [
        BadBody(body: #"{"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":1,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":1}"#, field: "accuracy"),
        BadBody(body: #"{"latitude":"52.5","longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":1,"longitude":"east","accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":1,"accuracy":"5"}"#, field: "accuracy"),
        BadBody(body: #"{"latitude":null,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":true,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":NaN,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":1,"longitude":Infinity,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":-Infinity,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":1,"accuracy":NaN}"#, field: "accuracy"),
        BadBody(body: #"{"latitude":1e999,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":1,"longitude":-1e400,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":"NaN","longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":90.000001,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":-90.5,"longitude":1,"accuracy":5}"#, field: "latitude"),
        BadBody(body: #"{"latitude":1,"longitude":180.01,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":-181,"accuracy":5}"#, field: "longitude"),
        BadBody(body: #"{"latitude":1,"longitude":1,"accuracy":-0.1}"#, field: "accuracy"),
        BadBody(body: #"{"latitude":1,"longitude":1,"accuracy":100000.5}"#, field: "accuracy"),
        BadBody(body: #"[52.5, 13.4, 5]"#, field: nil),
        BadBody(body: #"not json"#, field: nil),
        BadBody(body: "", field: nil),
    ]

    @Test("A bad position is 400 naming the field, on start and on update", arguments: badBodies)
    func badPositions(_ bad: BadBody) async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        _ = try await fixture.share(fixture.olivia, fixture.conversationPath)
        for method in ["POST", "PUT"] {
            for path in [fixture.conversationPath, fixture.groupPath] {
                let response = await fixture.request(fixture.olivia, method, path, bad.body)
                #expect(response.status == 400, "\(method) \(path): \(response.text)")
                #expect(response.errorCode == "VALIDATION_FAILED")
                #expect(
                    (response.json?["error"] as? [String: Any])?["field"] as? String == bad.field,
                    "\(method): \(response.text)")
            }
        }
        // Nothing was changed by the rejected updates.
        let shares = try await fixture.list(fixture.max, fixture.conversationPath)
        #expect(shares.count == 1 && shares.first?.latitude == 52.52)
    }

    @Test(
        "durationSeconds must be an integer from 60 to 28800",
        arguments: ["59", "28801", "0", "-5", "1.5", #""3600""#, "null"])
    func badDurations(_ value: String) async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let response = await fixture.request(
            fixture.olivia, "POST", fixture.conversationPath,
            #"{"latitude":1,"longitude":2,"accuracy":3,"durationSeconds":\#(value)}"#)
        if value == "null" {
            // null is the same as leaving it out: the default hour.
            #expect(response.status == 201, "\(response.text)")
            return
        }
        #expect(response.status == 400, "\(response.text)")
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == "durationSeconds")
    }

    @Test func theBoundsThemselvesAreAccepted() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        for body in [
            #"{"latitude":90,"longitude":180,"accuracy":0,"durationSeconds":60}"#,
            #"{"latitude":-90,"longitude":-180,"accuracy":100000,"durationSeconds":28800}"#,
            #"{"latitude":-0.0,"longitude":0,"accuracy":0.5,"unknownField":"ignored"}"#,
        ] {
            let response = await fixture.request(fixture.olivia, "POST", fixture.conversationPath, body)
            #expect([200, 201].contains(response.status), "\(body): \(response.text)")
        }
        let share = try #require(try await fixture.list(fixture.max, fixture.conversationPath).first)
        #expect(share.latitude == 0 && share.latitude.sign == .plus, "−0 is answered as 0")
    }

    // MARK: The lifecycle

    @Test func startUpdateListStopAndMineWithTheirTimes() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max) = (fixture.olivia, fixture.max)
        let started = try await fixture.share(
            olivia, fixture.conversationPath, #"{"latitude":1,"longitude":2,"accuracy":3,"durationSeconds":600}"#)
        #expect(started.userId == olivia.id && started.conversationId == fixture.conversation && started.groupId == nil)
        #expect(started.startedAt == started.updatedAt)
        #expect(started.expiresAt == Timestamp.iso8601(fixture.world.clock.now.addingTimeInterval(600)))

        fixture.world.clock.advance(seconds: 30)
        let moved = await fixture.request(
            olivia, "PUT", fixture.conversationPath, #"{"latitude":1.5,"longitude":2.5,"accuracy":4}"#)
        #expect(moved.status == 200, "\(moved.text)")
        let update = try JSONDecoder().decode(LiveLocation.self, from: Data(moved.bodyBytes))
        #expect(update.latitude == 1.5 && update.longitude == 2.5 && update.accuracy == 4)
        #expect(
            update.startedAt == started.startedAt && update.expiresAt == started.expiresAt,
            "an update keeps the start and the end")
        #expect(update.updatedAt == Timestamp.iso8601(fixture.world.clock.now))

        // Max shares too; the list is by user id; each sees both.
        _ = try await fixture.share(max, fixture.conversationPath)
        let listed = try await fixture.list(olivia, fixture.conversationPath)
        #expect(listed.map(\.userId) == [olivia.id, max.id].sorted())

        // Starting again restarts the duration from now and keeps the start.
        fixture.world.clock.advance(seconds: 30)
        let again = await fixture.request(
            olivia, "POST", fixture.conversationPath,
            #"{"latitude":7,"longitude":8,"accuracy":9,"durationSeconds":120}"#)
        #expect(again.status == 200, "a running share started again is 200, not 201")
        let restarted = try JSONDecoder().decode(LiveLocation.self, from: Data(again.bodyBytes))
        #expect(restarted.startedAt == started.startedAt)
        #expect(restarted.expiresAt == Timestamp.iso8601(fixture.world.clock.now.addingTimeInterval(120)))

        // Mine: Olivia's shares anywhere, oldest start first.
        _ = try await fixture.share(olivia, fixture.groupPath)
        let mine = await fixture.request(olivia, "GET", "/live-locations/mine")
        let own = try JSONDecoder().decode(LiveLocationList.self, from: Data(mine.bodyBytes)).liveLocations
        #expect(own.map { $0.conversationId ?? $0.groupId } == [fixture.conversation, fixture.group])
        #expect(own.allSatisfy { $0.userId == olivia.id })

        // Stop, and stop again (idempotent); then an update is 409 NOT_SHARING.
        #expect(await fixture.request(olivia, "DELETE", fixture.conversationPath).status == 204)
        #expect(await fixture.request(olivia, "DELETE", fixture.conversationPath).status == 204)
        let late = await fixture.request(olivia, "PUT", fixture.conversationPath, LiveLocationTests.position)
        #expect(late.status == 409 && late.errorCode == "NOT_SHARING")
        #expect(try await fixture.list(max, fixture.conversationPath).map(\.userId) == [max.id])
    }

    @Test func anUpdateBeforeAnyStartIs409NotSharing() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        for path in [fixture.conversationPath, fixture.groupPath] {
            let response = await fixture.request(fixture.max, "PUT", path, LiveLocationTests.position)
            #expect(response.status == 409 && response.errorCode == "NOT_SHARING", "\(path): \(response.text)")
        }
    }

    @Test func everyChangeWritesLiveLocationChangedToTheScopesParticipants() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max, ann, sam) = (fixture.olivia, fixture.max, fixture.ann, fixture.sam)
        var cursors: [String: Int64] = [:]
        for person in [olivia, max, ann, sam] { cursors[person.id] = try await fixture.cursor(person) }
        func changed(_ person: CallWorld.Person) async throws -> [Event] {
            let (events, cursor) = try await fixture.liveEvents(person, after: cursors[person.id] ?? 0)
            cursors[person.id] = cursor
            return events
        }
        _ = try await fixture.share(olivia, fixture.conversationPath)
        for person in [olivia, max] {
            let events = try await changed(person)
            #expect(
                events.count == 1 && events.first?.conversationId == fixture.conversation
                    && events.first?.groupId == nil)
        }
        let annHeard = try await changed(ann), samHeard = try await changed(sam)
        #expect(annHeard.isEmpty && samHeard.isEmpty)

        _ = await fixture.request(olivia, "PUT", fixture.conversationPath, LiveLocationTests.position)
        #expect(try await changed(max).count == 1)
        _ = await fixture.request(olivia, "DELETE", fixture.conversationPath)
        #expect(try await changed(max).count == 1)
        _ = await fixture.request(olivia, "DELETE", fixture.conversationPath)
        #expect(try await changed(max).isEmpty, "stopping nothing tells nobody")

        _ = try await fixture.share(ann, fixture.groupPath)
        for person in [olivia, max, ann] {
            let events = try await changed(person).filter { $0.groupId == fixture.group }
            #expect(events.count == 1, "group members hear of it")
        }
        #expect(try await changed(sam).isEmpty)
    }

    // MARK: Permissions

    @Test func thePermissionMatrix() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let world = fixture.world
        let (olivia, max, sam) = (fixture.olivia, fixture.max, fixture.sam)
        // Bob: Olivia's friend she blocked; Bea: her friend who blocked her; Eve: an ex-friend.
        let bob = try await world.person("bob"), bea = try await world.person("bea"),
            eve = try await world.person("eve")
        let withBob = try await world.befriend(olivia, bob), withBea = try await world.befriend(olivia, bea)
        let withEve = try await world.befriend(olivia, eve)
        #expect(await fixture.request(olivia, "PUT", "/blocks/\(bob.id)").status == 200)
        #expect(await fixture.request(bea, "PUT", "/blocks/\(olivia.id)").status == 200)
        #expect(await fixture.request(eve, "DELETE", "/friends/\(olivia.id)").status == 204)

        struct Case {
            let who: CallWorld.Person
            let path: String
            let start: Int
            let code: String?
            let read: Int
        }
        let conversation = { (id: String) in "/conversations/\(id)/live-locations" }
        let cases = [
            Case(who: olivia, path: fixture.conversationPath, start: 201, code: nil, read: 200),
            Case(who: max, path: fixture.conversationPath, start: 201, code: nil, read: 200),
            Case(who: sam, path: fixture.conversationPath, start: 404, code: "NOT_FOUND", read: 404),
            Case(who: olivia, path: conversation(withBob), start: 403, code: "BLOCKED", read: 200),
            Case(who: bob, path: conversation(withBob), start: 403, code: "BLOCKED", read: 200),
            Case(who: olivia, path: conversation(withBea), start: 403, code: "BLOCKED", read: 200),
            Case(who: eve, path: conversation(withEve), start: 403, code: "NOT_FRIENDS", read: 200),
            Case(who: olivia, path: fixture.groupPath, start: 201, code: nil, read: 200),
            Case(who: max, path: fixture.groupPath, start: 201, code: nil, read: 200),
            Case(who: sam, path: fixture.groupPath, start: 404, code: "NOT_FOUND", read: 404),
            Case(
                who: olivia, path: "/conversations/\(UUID().uuidString.lowercased())/live-locations", start: 404,
                code: "NOT_FOUND", read: 404),
            Case(
                who: olivia, path: "/groups/\(UUID().uuidString.lowercased())/live-locations", start: 404,
                code: "NOT_FOUND", read: 404),
        ]
        for item in cases {
            let started = await fixture.request(item.who, "POST", item.path, LiveLocationTests.position)
            #expect(started.status == item.start, "start \(item.path): \(started.text)")
            if let code = item.code { #expect(started.errorCode == code, "\(item.path)") }
            let updated = await fixture.request(item.who, "PUT", item.path, LiveLocationTests.position)
            #expect(updated.status == (item.start == 201 ? 200 : item.start), "update \(item.path): \(updated.text)")
            #expect(await fixture.request(item.who, "GET", item.path).status == item.read, "read \(item.path)")
            #expect(
                await fixture.request(item.who, "DELETE", item.path).status == (item.read == 200 ? 204 : 404),
                "stop \(item.path)")
        }
        // Without a token: 401 everywhere.
        for (method, path) in [
            ("POST", fixture.conversationPath), ("GET", fixture.groupPath), ("GET", "/live-locations/mine"),
            ("GET", "/location/city"),
        ] {
            let response = await world.app.request(method, path, body: LiveLocationTests.position)
            #expect(response.status == 401, "\(method) \(path)")
        }
    }

    // MARK: Ends

    @Test func aShareEndsAtItsExpiryOnTheManualClockAndIsNeverListedPastIt() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max) = (fixture.olivia, fixture.max)
        _ = try await fixture.share(
            olivia, fixture.conversationPath, #"{"latitude":1,"longitude":2,"accuracy":3,"durationSeconds":60}"#)
        _ = try await fixture.share(max, fixture.conversationPath)  // the default hour
        let cursor = try await fixture.cursor(max)
        try await fixture.advanceWithTheSweepAsleep(seconds: 59)
        #expect(try await fixture.list(max, fixture.conversationPath).count == 2)
        try await fixture.advanceWithTheSweepAsleep(seconds: 1)
        // At its end exactly it is not listed, whether or not the sweep ran.
        #expect(try await fixture.list(max, fixture.conversationPath).map(\.userId) == [max.id])
        let late = await fixture.request(olivia, "PUT", fixture.conversationPath, LiveLocationTests.position)
        #expect(late.status == 409 && late.errorCode == "NOT_SHARING", "an expired share cannot be moved")
        // The sweep (on the manual clock) removes it and tells both.
        #expect(try await eventuallyTrying { try await fixture.liveEvents(max, after: cursor).events.count == 1 })
        #expect(try await fixture.liveEvents(olivia, after: cursor).events.count == 1)
        let remaining = try await fixture.world.app.application.store.read { connection in
            try connection.query("SELECT user_id FROM live_locations", []).map { try $0.string("user_id") }
        }
        #expect(remaining == [max.id])
        // A start after the end is a new share (201) with a new start.
        let again = await fixture.request(olivia, "POST", fixture.conversationPath, LiveLocationTests.position)
        #expect(again.status == 201)
        // The default hour: Max's share is gone an hour after it began.
        fixture.world.clock.advance(seconds: 3540)
        #expect(
            try await eventuallyTrying {
                try await fixture.list(olivia, fixture.conversationPath).map(\.userId) == [olivia.id]
            })
        #expect(try await fixture.world.app.application.liveLocations.sweepExpired() >= 0)
    }

    @Test func unfriendingEndsBothSharesOfTheConversation() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        _ = try await fixture.share(fixture.olivia, fixture.conversationPath)
        _ = try await fixture.share(fixture.max, fixture.conversationPath)
        let cursor = try await fixture.cursor(fixture.max)
        #expect(await fixture.request(fixture.olivia, "DELETE", "/friends/\(fixture.max.id)").status == 204)
        #expect(try await fixture.list(fixture.max, fixture.conversationPath).isEmpty)
        #expect(try await fixture.liveEvents(fixture.max, after: cursor).events.count == 1, "one event for the change")
        let mine = await fixture.request(fixture.olivia, "GET", "/live-locations/mine")
        #expect(try JSONDecoder().decode(LiveLocationList.self, from: Data(mine.bodyBytes)).liveLocations.isEmpty)
    }

    @Test func aBlockEitherWayEndsTheConversationsShares() async throws {
        for blockerIsOlivia in [true, false] {
            let fixture = try await Fixture()
            defer { fixture.close() }
            _ = try await fixture.share(fixture.olivia, fixture.conversationPath)
            _ = try await fixture.share(fixture.max, fixture.conversationPath)
            _ = try await fixture.share(fixture.olivia, fixture.groupPath)
            let (blocker, blocked) = blockerIsOlivia ? (fixture.olivia, fixture.max) : (fixture.max, fixture.olivia)
            #expect(await fixture.request(blocker, "PUT", "/blocks/\(blocked.id)").status == 200)
            #expect(try await fixture.list(fixture.olivia, fixture.conversationPath).isEmpty)
            #expect(
                try await fixture.list(fixture.olivia, fixture.groupPath).count == 1,
                "the group's share is not the conversation's")
        }
    }

    @Test func leavingRemovalAndDissolutionEndGroupShares() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max, ann) = (fixture.olivia, fixture.max, fixture.ann)
        for person in [olivia, max, ann] { _ = try await fixture.share(person, fixture.groupPath) }
        let cursor = try await fixture.cursor(olivia)
        // Ann leaves: only her share ends, and the members hear of it.
        #expect(await fixture.request(ann, "POST", "/groups/\(fixture.group)/leave").status == 204)
        #expect(try await fixture.list(olivia, fixture.groupPath).map(\.userId) == [olivia.id, max.id].sorted())
        #expect(try await fixture.liveEvents(olivia, after: cursor).events.count == 1)
        // The owner removes Max: his share ends.
        #expect(await fixture.request(olivia, "DELETE", "/groups/\(fixture.group)/members/\(max.id)").status == 204)
        #expect(try await fixture.list(olivia, fixture.groupPath).map(\.userId) == [olivia.id])
        let maxMine = await fixture.request(max, "GET", "/live-locations/mine")
        #expect(try JSONDecoder().decode(LiveLocationList.self, from: Data(maxMine.bodyBytes)).liveLocations.isEmpty)
        // Dissolution ends the rest.
        #expect(await fixture.request(olivia, "DELETE", "/groups/\(fixture.group)").status == 204)
        let count = try await fixture.world.app.application.store.read { connection in
            try connection.query("SELECT COUNT(*) AS n FROM live_locations", []).first?.int("n") ?? -1
        }
        #expect(count == 0)
    }
}

extension LiveLocationTests {
    @Test func startingAgainNeverKeepsAShareBeyondEightHoursFromItsStart() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let first = try await fixture.share(
            fixture.olivia, fixture.conversationPath,
            #"{"latitude":1,"longitude":2,"accuracy":3,"durationSeconds":28800}"#)
        fixture.world.clock.advance(seconds: 7 * 3600)
        let again = try await fixture.share(
            fixture.olivia, fixture.conversationPath,
            #"{"latitude":1,"longitude":2,"accuracy":3,"durationSeconds":28800}"#)
        #expect(again.startedAt == first.startedAt)
        #expect(again.expiresAt == first.expiresAt, "capped at 8 h after the first start")
    }
}
