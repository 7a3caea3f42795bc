import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardTesting
import SwitchboardWire

/// The per-device E2EE queue (SPEC §9) over the in-process application, on the store the run
/// names (`make test` runs it on SQLite and on PostgreSQL).
@Suite("E2EE device queue", .timeLimit(.minutes(3)))
struct E2EEQueueTests {
    /// Olivia and Max friends with their conversation; Sam a stranger; a group of Olivia
    /// (owner), Max and Ann. Devices: Olivia o1, o2; Max m1, m2; Ann a1; Sam s1.
    struct Fixture {
        let world: CallWorld
        let olivia: CallWorld.Person, max: CallWorld.Person, ann: CallWorld.Person, sam: CallWorld.Person
        let conversation: String, group: String
        let o1 = UUID().uuidString.lowercased(), o2 = UUID().uuidString.lowercased()
        let m1 = UUID().uuidString.lowercased(), m2 = UUID().uuidString.lowercased()
        let a1 = UUID().uuidString.lowercased(), s1 = UUID().uuidString.lowercased()

        init() async throws {
            world = try CallWorld()
            olivia = try await world.person("olivia")
            max = try await world.person("max")
            ann = try await world.person("ann")
            sam = try await world.person("sam")
            conversation = try await world.befriend(olivia, max)
            group = try await world.group(olivia, [max, ann])
            for (person, device) in [(olivia, o1), (olivia, o2), (max, m1), (max, m2), (ann, a1), (sam, s1)] {
                let response = await request(person, "POST", "/e2ee/devices", #"{"deviceId":"\#(device)"}"#)
                try #require(response.status == 201, "register: \(response.text)")
            }
        }

        func request(
            _ person: CallWorld.Person, _ method: String, _ path: String, _ body: String = ""
        ) async -> HTTPResponse {
            await world.app.request(method, path, headers: person.headers, body: body)
        }

        static func body(
            from sender: String, kind: String = "application", to recipients: [(String, [UInt8])],
            clientId: String? = nil
        ) -> String {
            let list = recipients.map {
                #"{"deviceId":"\#($0.0)","ciphertext":"\#(Data($0.1).base64EncodedString())"}"#
            }.joined(separator: ",")
            let client = clientId.map { #","clientId":"\#($0)""# } ?? ""
            return #"{"senderDeviceId":"\#(sender)","kind":"\#(kind)","recipients":[\#(list)]\#(client)}"#
        }

        /// Sends and requires success.
        @discardableResult
        func send(
            _ person: CallWorld.Person, device: String, to recipients: [(String, [UInt8])], scope: String? = nil,
            kind: String = "application"
        ) async throws -> E2EESendResult {
            let response = await request(
                person, "POST", "\(scope ?? conversationScope)/messages",
                Self.body(from: device, kind: kind, to: recipients))
            try #require(response.status == 201, "send: \(response.status) \(response.text)")
            return try JSONDecoder().decode(E2EESendResult.self, from: Data(response.bodyBytes))
        }

        func page(
            _ person: CallWorld.Person, device: String, after: Int64? = nil, scope: String? = nil
        ) async -> HTTPResponse {
            let query = "deviceId=\(device)" + (after.map { "&after=\($0)" } ?? "")
            return await request(person, "GET", "\(scope ?? conversationScope)/events?\(query)")
        }

        func read(
            _ person: CallWorld.Person, device: String, after: Int64? = nil, scope: String? = nil
        ) async throws -> E2EEEventsPage {
            let response = await page(person, device: device, after: after, scope: scope)
            try #require(response.status == 200, "read: \(response.status) \(response.text)")
            return try JSONDecoder().decode(E2EEEventsPage.self, from: Data(response.bodyBytes))
        }

        func itemCount(device: String) async throws -> Int {
            try await world.app.application.store.read { connection in
                try connection.query("SELECT COUNT(*) AS n FROM e2ee_items WHERE device_id = ?1", [.text(device)])
                    .first?.int("n") ?? -1
            }
        }

        var conversationScope: String { "/e2ee/conversations/\(conversation)" }
        var groupScope: String { "/e2ee/groups/\(group)" }
        func close() { world.close() }
    }

    static func field(_ response: HTTPResponse) -> String? {
        (response.json?["error"] as? [String: Any])?["field"] as? String
    }

    // MARK: Devices

    @Test func devicesRegisterOnceListAndGoWithTheirQueue() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let again = await fixture.request(
            fixture.olivia, "POST", "/e2ee/devices", #"{"deviceId":"\#(fixture.o1.uppercased())"}"#)
        #expect(again.status == 200, "the owner registering again is 200: \(again.text)")
        let taken = await fixture.request(fixture.sam, "POST", "/e2ee/devices", #"{"deviceId":"\#(fixture.o1)"}"#)
        #expect(taken.status == 409 && taken.errorCode == "DEVICE_ID_TAKEN")
        for bad in [#"{"deviceId":"not-a-uuid"}"#, #"{"deviceId":7}"#, "{}", "[]"] {
            let response = await fixture.request(fixture.olivia, "POST", "/e2ee/devices", bad)
            #expect(response.status == 400, "\(bad): \(response.text)")
        }
        let mine = try JSONDecoder().decode(
            E2EEDeviceList.self, from: Data(await fixture.request(fixture.olivia, "GET", "/e2ee/devices").bodyBytes))
        #expect(Set(mine.devices.map(\.deviceId)) == [fixture.o1, fixture.o2])
        #expect(mine.devices.allSatisfy { $0.userId == fixture.olivia.id })

        // The scope's devices: both participants', nobody else's.
        let scoped = try JSONDecoder().decode(
            E2EEDeviceList.self,
            from: Data(await fixture.request(fixture.max, "GET", "\(fixture.conversationScope)/devices").bodyBytes))
        #expect(Set(scoped.devices.map(\.deviceId)) == [fixture.o1, fixture.o2, fixture.m1, fixture.m2])
        let grouped = try JSONDecoder().decode(
            E2EEDeviceList.self,
            from: Data(await fixture.request(fixture.ann, "GET", "\(fixture.groupScope)/devices").bodyBytes))
        #expect(grouped.devices.count == 5)
        #expect(await fixture.request(fixture.sam, "GET", "\(fixture.conversationScope)/devices").status == 404)

        // Someone else's device cannot be removed (404, as unknown); one's own goes with its queue.
        try await fixture.send(fixture.max, device: fixture.m1, to: [(fixture.o1, [1, 2, 3])])
        #expect(await fixture.request(fixture.sam, "DELETE", "/e2ee/devices/\(fixture.o1)").status == 404)
        #expect(await fixture.request(fixture.olivia, "DELETE", "/e2ee/devices/\(fixture.o1)").status == 204)
        #expect(await fixture.request(fixture.olivia, "DELETE", "/e2ee/devices/\(fixture.o1)").status == 404)
        #expect(try await fixture.itemCount(device: fixture.o1) == 0)
    }

    // MARK: Ordering, isolation, batches, cursors

    @Test func eachDeviceHasItsOwnStrictlyIncreasingSequenceAndSeesOnlyItsOwnCopies() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max) = (fixture.olivia, fixture.max)
        var sent: [E2EESendResult] = []
        for index in 0..<3 {
            sent.append(
                try await fixture.send(
                    olivia, device: fixture.o1,
                    to: [
                        (fixture.m1, [UInt8(index), 0xFF]), (fixture.m2, [UInt8(index), 0xEE]),
                        (fixture.o2, [UInt8(index)]),
                    ]))
        }
        #expect(sent.map { $0.deliveries.map(\.sequence) } == [[1, 1, 1], [2, 2, 2], [3, 3, 3]])
        let m1 = try await fixture.read(max, device: fixture.m1)
        #expect(m1.items.map(\.sequence) == [1, 2, 3] && m1.cursor == 3 && !m1.hasMore)
        #expect(
            m1.items.map { Array(Data(base64Encoded: $0.ciphertext) ?? Data()) } == [
                [0, 0xFF], [1, 0xFF], [2, 0xFF],
            ])
        #expect(
            m1.items.allSatisfy {
                $0.senderUserId == olivia.id && $0.senderDeviceId == fixture.o1 && $0.kind == "application"
            })
        #expect(m1.items.map(\.messageId) == sent.map(\.messageId))
        #expect(m1.items.allSatisfy { $0.conversationId == fixture.conversation && $0.groupId == nil })
        let m2 = try await fixture.read(max, device: fixture.m2)
        #expect(
            m2.items.map { Array(Data(base64Encoded: $0.ciphertext) ?? Data()) } == [
                [0, 0xEE], [1, 0xEE], [2, 0xEE],
            ])
        // Olivia's other device got its own copies; a device reads only its own queue.
        #expect(try await fixture.read(olivia, device: fixture.o2).items.count == 3)
        #expect(try await fixture.read(olivia, device: fixture.o1).items.isEmpty)
        let foreign = await fixture.page(olivia, device: fixture.m1)
        #expect(foreign.status == 403 && foreign.errorCode == "NOT_YOUR_DEVICE")
        let unknown = await fixture.page(max, device: UUID().uuidString)
        #expect(unknown.status == 404 && Self.field(unknown) == "deviceId")
        let stranger = await fixture.page(fixture.sam, device: fixture.s1)
        #expect(stranger.status == 404, "a stranger cannot see the conversation")
    }

    @Test func theOrdinaryFeedGetsOneE2EEEventPerRecipientUser() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let maxBefore = try await fixture.world.events(of: fixture.max).last?.id ?? 0
        let oliviaBefore = try await fixture.world.events(of: fixture.olivia).last?.id ?? 0
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [1]), (fixture.m2, [2])])
        let maxEvents = try await fixture.world.events(of: fixture.max, after: maxBefore).filter {
            $0.kind == EventKind.e2ee
        }
        #expect(maxEvents.count == 1 && maxEvents.first?.conversationId == fixture.conversation)
        #expect(
            try await fixture.world.events(of: fixture.olivia, after: oliviaBefore).filter { $0.kind == EventKind.e2ee }
                .isEmpty,
            "the sender hears nothing when none of its devices was addressed")
        try await fixture.send(
            fixture.ann, device: fixture.a1, to: [(fixture.o2, [3])], scope: fixture.groupScope, kind: "commit")
        let groupEvents = try await fixture.world.events(of: fixture.olivia, after: oliviaBefore).filter {
            $0.kind == EventKind.e2ee
        }
        #expect(groupEvents.count == 1 && groupEvents.first?.groupId == fixture.group)
    }

    @Test func readsComeInBatchesOf100WithHasMoreAndAfterAcknowledges() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        for index in 0..<250 {
            try await fixture.send(
                fixture.olivia, device: fixture.o1, to: [(fixture.m1, [UInt8(index % 256), UInt8(index / 256)])])
        }
        let first = try await fixture.read(fixture.max, device: fixture.m1)
        #expect(first.items.count == 100 && first.hasMore && first.cursor == 100)
        #expect(first.items.first?.sequence == 1 && first.items.last?.sequence == 100)
        // Reading the same page again is harmless: nothing was acknowledged yet.
        #expect(try await fixture.read(fixture.max, device: fixture.m1, after: 0).cursor == 100)
        let second = try await fixture.read(fixture.max, device: fixture.m1, after: first.cursor)
        #expect(second.items.count == 100 && second.hasMore && second.items.first?.sequence == 101)
        #expect(try await fixture.itemCount(device: fixture.m1) == 150, "after=100 deleted the first hundred")
        // The same cursor again gives the same page (a retry after a lost answer).
        #expect(
            try await fixture.read(fixture.max, device: fixture.m1, after: first.cursor).items.first?.sequence == 101)
        let third = try await fixture.read(fixture.max, device: fixture.m1, after: second.cursor)
        #expect(third.items.count == 50 && !third.hasMore && third.cursor == 250)
        let done = try await fixture.read(fixture.max, device: fixture.m1, after: third.cursor)
        #expect(done.items.isEmpty && done.cursor == 250 && !done.hasMore)
        #expect(try await fixture.itemCount(device: fixture.m1) == 0)
        // Behind the acknowledgement: those items are gone, and the client is told.
        let behind = await fixture.page(fixture.max, device: fixture.m1, after: 100)
        #expect(behind.status == 410 && behind.errorCode == "CURSOR_EXPIRED")
        // Beyond the newest sequence: it would acknowledge items not written yet.
        let beyond = await fixture.page(fixture.max, device: fixture.m1, after: 251)
        #expect(beyond.status == 400 && Self.field(beyond) == "after")
        for bad in ["-1", "abc", "9007199254740992", ""] {
            let response = await fixture.request(
                fixture.max, "GET", "\(fixture.conversationScope)/events?deviceId=\(fixture.m1)&after=\(bad)")
            #expect(response.status == 400 && Self.field(response) == "after", "after=\(bad)")
        }
        let noDevice = await fixture.request(fixture.max, "GET", "\(fixture.conversationScope)/events")
        #expect(noDevice.status == 400 && Self.field(noDevice) == "deviceId")
    }

    @Test func scopesKeepTheirItemsApartOnOneDeviceSequence() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [1])])
        try await fixture.send(fixture.ann, device: fixture.a1, to: [(fixture.m1, [2])], scope: fixture.groupScope)
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [3])])
        let conversation = try await fixture.read(fixture.max, device: fixture.m1)
        #expect(conversation.items.map(\.sequence) == [1, 3])
        let group = try await fixture.read(fixture.max, device: fixture.m1, scope: fixture.groupScope)
        #expect(group.items.map(\.sequence) == [2] && group.items.first?.groupId == fixture.group)
        // Acknowledging the conversation leaves the group's item.
        _ = try await fixture.read(fixture.max, device: fixture.m1, after: 3)
        #expect(try await fixture.read(fixture.max, device: fixture.m1, scope: fixture.groupScope).items.count == 1)
    }

    // MARK: Sending rules

    @Test func sendValidationNamesTheField() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let path = "\(fixture.conversationScope)/messages"
        let big = [UInt8](repeating: 7, count: 65_537)
        let cases: [(String, String)] = [
            (Fixture.body(from: "nope", to: [(fixture.m1, [1])]), "senderDeviceId"),
            (Fixture.body(from: fixture.o1, kind: "", to: [(fixture.m1, [1])]), "kind"),
            (Fixture.body(from: fixture.o1, kind: "Welcome", to: [(fixture.m1, [1])]), "kind"),
            (Fixture.body(from: fixture.o1, kind: "9lives", to: [(fixture.m1, [1])]), "kind"),
            (Fixture.body(from: fixture.o1, kind: String(repeating: "a", count: 33), to: [(fixture.m1, [1])]), "kind"),
            (Fixture.body(from: fixture.o1, to: []), "recipients"),
            (
                Fixture.body(from: fixture.o1, to: [(fixture.m1, [1]), (fixture.m1.uppercased(), [2])]),
                "recipients[1].deviceId"
            ),
            (Fixture.body(from: fixture.o1, to: [(fixture.m1, big)]), "recipients[0].ciphertext"),
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)","ciphertext":"not base64!"}]}"#,
                "recipients[0].ciphertext"
            ),
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)","ciphertext":""}]}"#,
                "recipients[0].ciphertext"
            ),
            // What Foundation's decoder alone would take, and the document's pattern does not.
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)","ciphertext":"===="}]}"#,
                "recipients[0].ciphertext"
            ),
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)","ciphertext":"AAAA="}]}"#,
                "recipients[0].ciphertext"
            ),
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)","ciphertext":"AA=A"}]}"#,
                "recipients[0].ciphertext"
            ),
            (
                #"{"senderDeviceId":"\#(fixture.o1)","kind":"commit","recipients":[{"deviceId":"\#(fixture.m1)"}]}"#,
                "recipients[0].ciphertext"
            ),
            (
                Fixture.body(from: fixture.o1, to: [(fixture.m1, [1])], clientId: String(repeating: "x", count: 65)),
                "clientId"
            ),
        ]
        for (body, field) in cases {
            let response = await fixture.request(fixture.olivia, "POST", path, body)
            #expect(
                response.status == 400 && Self.field(response) == field,
                "\(field): \(response.status) \(response.text.prefix(200))")
        }
        let notMine = await fixture.request(
            fixture.olivia, "POST", path, Fixture.body(from: fixture.m2, to: [(fixture.m1, [1])]))
        #expect(
            notMine.status == 403 && notMine.errorCode == "NOT_YOUR_DEVICE" && Self.field(notMine) == "senderDeviceId")
        let outsider = await fixture.request(
            fixture.olivia, "POST", path, Fixture.body(from: fixture.o1, to: [(fixture.m1, [1]), (fixture.a1, [2])]))
        #expect(
            outsider.status == 404 && Self.field(outsider) == "recipients[1].deviceId", "Ann is not in the conversation"
        )
        #expect(
            try await fixture.itemCount(device: fixture.m1) == 0,
            "a rejected send queues nothing, not even the valid copies")
        let maxSize = [UInt8](repeating: 9, count: 65_536)
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, maxSize)])
        let item = try #require(try await fixture.read(fixture.max, device: fixture.m1).items.first)
        #expect(Data(base64Encoded: item.ciphertext)?.count == 65_536)
    }

    @Test func permissionsFriendshipForConversationsMembershipForGroups() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max, sam) = (fixture.olivia, fixture.max, fixture.sam)
        let strangerSend = await fixture.request(
            sam, "POST", "\(fixture.conversationScope)/messages",
            Fixture.body(from: fixture.s1, to: [(fixture.m1, [1])]))
        #expect(strangerSend.status == 404)
        let strangerGroup = await fixture.request(
            sam, "POST", "\(fixture.groupScope)/messages", Fixture.body(from: fixture.s1, to: [(fixture.m1, [1])]))
        #expect(strangerGroup.status == 404)
        try await fixture.send(olivia, device: fixture.o1, to: [(fixture.m1, [1])])
        #expect(await fixture.request(max, "PUT", "/blocks/\(olivia.id)").status == 200)
        let blocked = await fixture.request(
            olivia, "POST", "\(fixture.conversationScope)/messages",
            Fixture.body(from: fixture.o1, to: [(fixture.m1, [2])]))
        #expect(blocked.status == 403 && blocked.errorCode == "BLOCKED")
        // What was queued before stays readable by its device.
        #expect(try await fixture.read(max, device: fixture.m1).items.count == 1)
        #expect(await fixture.request(max, "DELETE", "/blocks/\(olivia.id)").status == 204)
        #expect(await fixture.request(max, "DELETE", "/friends/\(olivia.id)").status == 204)
        let exFriend = await fixture.request(
            olivia, "POST", "\(fixture.conversationScope)/messages",
            Fixture.body(from: fixture.o1, to: [(fixture.m1, [3])]))
        #expect(exFriend.status == 403 && exFriend.errorCode == "NOT_FRIENDS")
    }

    @Test func aClientIdReplaysTheFirstSendAndRefusesOtherContent() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let path = "\(fixture.conversationScope)/messages"
        let body = Fixture.body(from: fixture.o1, kind: "welcome", to: [(fixture.m1, [1, 2])], clientId: "send-1")
        let first = await fixture.request(fixture.olivia, "POST", path, body)
        #expect(first.status == 201)
        let replay = await fixture.request(fixture.olivia, "POST", path, body)
        #expect(replay.status == 200 && replay.text == first.text, "the same answer, nothing new queued")
        #expect(try await fixture.itemCount(device: fixture.m1) == 1)
        let other = await fixture.request(
            fixture.olivia, "POST", path,
            Fixture.body(from: fixture.o1, kind: "welcome", to: [(fixture.m1, [9])], clientId: "send-1"))
        #expect(other.status == 409 && other.errorCode == "CLIENT_ID_REUSED")
        let elsewhere = await fixture.request(
            fixture.olivia, "POST", "\(fixture.groupScope)/messages",
            Fixture.body(from: fixture.o1, kind: "welcome", to: [(fixture.m1, [1, 2])], clientId: "send-1"))
        #expect(elsewhere.status == 409, "the same clientId in another scope is another send")
    }

    @Test func leavingAGroupDropsTheLeaversQueuedItemsThere() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        try await fixture.send(
            fixture.olivia, device: fixture.o1, to: [(fixture.a1, [1]), (fixture.m1, [1])], scope: fixture.groupScope)
        #expect(await fixture.request(fixture.ann, "POST", "/groups/\(fixture.group)/leave").status == 204)
        #expect(try await fixture.itemCount(device: fixture.a1) == 0)
        #expect(try await fixture.itemCount(device: fixture.m1) == 1)
        #expect(await fixture.page(fixture.ann, device: fixture.a1, scope: fixture.groupScope).status == 404)
    }

    @Test func itemsUnreadPastTheRetentionWindowArePrunedAndTheirCursorIsTold() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [1])])
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [2])])
        fixture.world.clock.advance(seconds: 31 * 86_400)
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [3])])
        // The hourly pruning loop (woken by the manual clock) may get there first.
        _ = try await fixture.world.app.application.e2ee.prune(olderThan: 30 * 86_400)
        #expect(try await eventuallyTrying { try await fixture.itemCount(device: fixture.m1) == 1 })
        let behind = await fixture.page(fixture.max, device: fixture.m1, after: 0)
        #expect(behind.status == 410 && behind.errorCode == "CURSOR_EXPIRED")
        let page = try await fixture.read(fixture.max, device: fixture.m1, after: 2)
        #expect(page.items.map(\.sequence) == [3])
    }
}

extension E2EEQueueTests {
    @Test func aRemovedDeviceRegisteredAgainGoesOnWithItsSequenceAndStaysItsOwners() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [1])])
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [2])])
        _ = try await fixture.read(fixture.max, device: fixture.m1, after: 1)
        #expect(await fixture.request(fixture.max, "DELETE", "/e2ee/devices/\(fixture.m1)").status == 204)
        #expect(await fixture.page(fixture.max, device: fixture.m1).status == 404, "a removed device has no queue")
        let toRemoved = await fixture.request(
            fixture.olivia, "POST", "\(fixture.conversationScope)/messages",
            Fixture.body(from: fixture.o1, to: [(fixture.m1, [3])]))
        #expect(toRemoved.status == 404)
        let taken = await fixture.request(fixture.sam, "POST", "/e2ee/devices", #"{"deviceId":"\#(fixture.m1)"}"#)
        #expect(taken.status == 409 && taken.errorCode == "DEVICE_ID_TAKEN", "a removed id stays its owner's")
        let back = await fixture.request(fixture.max, "POST", "/e2ee/devices", #"{"deviceId":"\#(fixture.m1)"}"#)
        #expect(back.status == 201)
        // The cursor saved before (2) is still valid, and new items come after it.
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [4])])
        let page = try await fixture.read(fixture.max, device: fixture.m1, after: 2)
        #expect(page.items.map(\.sequence) == [3])
    }

    @Test func dissolvingAGroupDropsItsQueuedItems() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        try await fixture.send(
            fixture.olivia, device: fixture.o1, to: [(fixture.a1, [1]), (fixture.m1, [1])], scope: fixture.groupScope)
        try await fixture.send(fixture.olivia, device: fixture.o1, to: [(fixture.m1, [2])])
        #expect(await fixture.request(fixture.olivia, "DELETE", "/groups/\(fixture.group)").status == 204)
        #expect(try await fixture.itemCount(device: fixture.a1) == 0)
        #expect(try await fixture.itemCount(device: fixture.m1) == 1, "the conversation's item stays")
    }
}
