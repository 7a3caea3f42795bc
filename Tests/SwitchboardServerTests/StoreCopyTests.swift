import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardTesting

/// `switchboard copy-to-postgres`: a server's SQLite data, copied into an empty PostgreSQL
/// database, answers every read of the API exactly as before, ids and cursors included, and
/// new writes continue after the copied ids.
@Suite("Copying SQLite into PostgreSQL", .timeLimit(.minutes(2)), .enabled(if: TestPostgres.available))
struct StoreCopyTests {
    @Test func theCopyAnswersEveryReadAsTheOriginalDidAndCopiesOnce() async throws {
        let world = try CallWorld(store: .sqlite)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            carol = try await world.person("carol")
        let toBob = try await world.befriend(alice, bob)
        let group = try await world.group(alice, [bob, carol])
        for text in ["hello", "it's me", "ünïcødé 📞"] {
            #expect(
                await world.app.request(
                    "POST", "/conversations/\(toBob)/messages", headers: alice.headers, body: #"{"text":"\#(text)"}"#
                ).status == 201)
        }
        #expect(
            await world.app.request(
                "POST", "/groups/\(group)/messages", headers: bob.headers, body: #"{"text":"team"}"#
            ).status == 201)
        _ = await world.app.request(
            "POST", "/voip/devices", headers: carol.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(String(repeating: "ab", count: 32))","environment":"production"}"#
        )
        let ended = try #require(await world.call(alice, "conversation", toBob).call)
        #expect(await world.act("accept", ended.id, by: bob).status == 200)
        #expect(await world.act("leave", ended.id, by: alice).status == 200)
        _ = try #require(await world.call(bob, "group", group).call)  // still ringing carol and alice
        #expect(await world.app.request("PUT", "/blocks/\(alice.id)", headers: carol.headers).status < 300)

        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let copied = try StoreCopy.copy(
            sqlitePath: world.app.directory.path + "/switchboard.sqlite3", postgresURL: fresh.url)
        #expect(copied.map(\.table) == StoreCopy.tables.map(\.name))
        #expect(
            copied.first { $0.table == "users" }?.rows == 3 && copied.first { $0.table == "events" }?.rows ?? 0 > 10)

        let copy = try TestApplication(environment: world.clock.environment, store: .postgres, sharing: fresh.url)
        defer { copy.close() }
        var reads = [
            "/me", "/friends", "/friend-requests", "/conversations", "/groups", "/blocks",
            "/calls/history?scopeKind=conversation&scopeId=\(toBob)",
            "/calls/current", "/conversations/\(toBob)/messages", "/groups/\(group)/messages", "/groups/\(group)",
            "/events?after=0",
            "/calls/\(ended.id)",
        ]
        reads += ["/events?after=3"]
        for person in [alice, bob, carol] {
            for path in reads {
                let before = await world.app.request("GET", path, headers: person.headers)
                let after = await copy.request("GET", path, headers: person.headers)
                #expect(
                    after.status == before.status && after.text == before.text,
                    "\(path) as \(person.id): \(before.text) became \(after.text)")
            }
        }
        // New writes continue after the copied ids.
        let lastEvent = try #require(
            await world.app.request("GET", "/me", headers: bob.headers).json?["eventCursor"] as? Int)
        #expect(
            await copy.request(
                "POST", "/conversations/\(toBob)/messages", headers: alice.headers, body: #"{"text":"on postgres"}"#
            ).status == 201)
        let next = await copy.request("GET", "/events?after=\(lastEvent)", headers: bob.headers)
        let ids = (next.json?["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
        #expect(ids.count == 1 && ids[0] > lastEvent)

        // A second copy is refused and adds nothing.
        let friends = await copy.request("GET", "/friends", headers: alice.headers).text
        #expect(throws: StoreError.self) {
            try StoreCopy.copy(sqlitePath: world.app.directory.path + "/switchboard.sqlite3", postgresURL: fresh.url)
        }
        #expect(await copy.request("GET", "/friends", headers: alice.headers).text == friends)
    }

    /// Retention deleted every event, but clients' cursors are past them: the copy's event ids
    /// continue after the cursors, not from 1 (where `id > cursor` would hide every new event).
    @Test func eventIdsContinueAfterPrunedOnes() async throws {
        let world = try CallWorld(store: .sqlite)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let id = try await world.befriend(alice, bob)
        _ = try await world.app.application.store.write { try $0.events.prune(before: "9999-12-31T00:00:00.000Z") }
        let cursor = try #require(
            await world.app.request("GET", "/me", headers: bob.headers).json?["eventCursor"] as? Int)
        #expect(cursor > 0)
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let copied = try StoreCopy.copy(
            sqlitePath: world.app.directory.path + "/switchboard.sqlite3", postgresURL: fresh.url)
        #expect(copied.first { $0.table == "events" }?.rows == 0)
        let copy = try TestApplication(environment: world.clock.environment, store: .postgres, sharing: fresh.url)
        defer { copy.close() }
        #expect(
            await copy.request(
                "POST", "/conversations/\(id)/messages", headers: alice.headers, body: #"{"text":"after the move"}"#
            ).status == 201)
        let next = await copy.request("GET", "/events?after=\(cursor)", headers: bob.headers)
        #expect(
            (next.json?["events"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } == ["message"],
            "\(next.text)")
    }
}
