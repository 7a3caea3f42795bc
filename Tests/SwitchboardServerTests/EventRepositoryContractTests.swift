import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardWire

/// ``EventRepository``'s contract, the same for every store.
@Suite("Repository contract: event feeds", .timeLimit(.minutes(2)))
struct EventRepositoryContractTests {
    static let early = "2030-01-01T00:00:00.000Z", late = "2030-01-02T00:00:00.000Z"

    static func page(
        _ store: ServerStore, _ userID: String, after: Int64, limit: Int = 100
    ) async throws -> EventPageResult {
        try await store.snapshot { try $0.events.page(for: userID, after: after, limit: limit) }
    }

    static func events(_ result: EventPageResult) -> [Event] {
        if case .events(let events) = result { events } else { [] }
    }

    @Test(arguments: StoreKind.allCases)
    func appendedEventsAreReadInIdOrderAfterACursor(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let a = try await fixture.account("ann"), b = try await fixture.account("ben")
        let base = try await store.snapshot { try $0.events.cursor(for: a.userID) }
        let references = EventReferences(conversationID: "c-1", messageID: "m-1")
        let written = try await store.write {
            try $0.events.append(.message, to: [b.userID, a.userID], references: references, at: Self.early)
        }
        #expect(written.map(\.userID) == [b.userID, a.userID])
        #expect(written[0].id < written[1].id)
        let mine = Self.events(try await Self.page(store, a.userID, after: base))
        #expect(
            mine == [
                Event(
                    id: written[1].id, kind: .message, conversationId: "c-1", groupId: nil, messageId: "m-1",
                    callId: nil, createdAt: Self.early)
            ])
        #expect(try await store.snapshot { try $0.events.cursor(for: a.userID) } == written[1].id)
        // More, then a limited page, then the rest after its last id.
        let more = try await store.write { transaction in
            try (0..<3).map { _ in
                try transaction.events.append(
                    .callChanged, to: [a.userID], references: EventReferences(callID: "k"), at: Self.late)[0].id
            }
        }
        let first = Self.events(try await Self.page(store, a.userID, after: base, limit: 2))
        #expect(first.map(\.id) == [written[1].id, more[0]])
        let rest = Self.events(try await Self.page(store, a.userID, after: more[0]))
        #expect(
            rest.map(\.id) == [more[1], more[2]]
                && rest.allSatisfy { $0.callId == "k" && $0.kind.rawValue == "call_changed" })
        #expect(Self.events(try await Self.page(store, a.userID, after: more[2])).isEmpty)
        #expect(Self.events(try await Self.page(store, "nobody", after: 0)).isEmpty)
        #expect(try await store.snapshot { try $0.events.cursor(for: "nobody") } == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func manyUsersAndAGroupsMembersGetOneEventEachInOrder(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let many = (0..<40).map { "user-\($0)" }
        let written = try await store.write {
            try $0.events.append(.friendRequest, to: many, references: EventReferences(), at: Self.early)
        }
        #expect(written.map(\.userID) == many)
        #expect(zip(written, written.dropFirst()).allSatisfy { $0.id < $1.id }, "ids grow in the order given")
        // A group's members, in the order they joined.
        let owner = try await fixture.account("gwen")
        let members = [try await fixture.world.person("hal"), try await fixture.world.person("ivy")]
        let group = try await fixture.world.group(owner.person, members)
        let signalled = try await store.write {
            try $0.events.append(
                .groupMessage, toMembersOf: group, references: EventReferences(messageID: "m-9"), at: Self.late)
        }
        // (They joined at the same moment here: ties go by user id.)
        #expect(signalled.map(\.userID) == ([owner.userID] + members.map(\.id)).sorted())
        #expect(zip(signalled, signalled.dropFirst()).allSatisfy { $0.id < $1.id })
        let event = try #require(Self.events(try await Self.page(store, members[1].id, after: 0)).last)
        #expect(event.groupId == group && event.messageId == "m-9" && event.kind.rawValue == "group_message")
        #expect(event.id == signalled.first { $0.userID == members[1].id }?.id)
    }

    @Test(arguments: StoreKind.allCases)
    func pruningDeletesOldEventsAndExpiresTheCursorsBeforeThem(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let kim = try await fixture.account("kim")
        let base = try await store.snapshot { try $0.events.cursor(for: kim.userID) }
        let old = try await store.write {
            try $0.events.append(.message, to: [kim.userID], references: EventReferences(), at: Self.early)[0].id
        }
        let new = try await store.write {
            try $0.events.append(.message, to: [kim.userID], references: EventReferences(), at: Self.late)[0].id
        }
        #expect(try await store.write { try $0.events.prune(before: "2030-01-01T12:00:00.000Z") } >= 1)
        #expect(
            try await Self.page(store, kim.userID, after: base) == .cursorExpired, "events it had not seen are gone")
        #expect(Self.events(try await Self.page(store, kim.userID, after: old)).map(\.id) == [new])
        #expect(try await store.snapshot { try $0.events.cursor(for: kim.userID) } == new)
        // Everything pruned: the cursor stays at the newest id deleted.
        _ = try await store.write { try $0.events.prune(before: "2031-01-01T00:00:00.000Z") }
        #expect(try await store.snapshot { try $0.events.cursor(for: kim.userID) } == new)
        #expect(try await Self.page(store, kim.userID, after: old) == .cursorExpired)
        #expect(Self.events(try await Self.page(store, kim.userID, after: new)).isEmpty)
        #expect(try await store.write { try $0.events.prune(before: "2031-01-01T00:00:00.000Z") } == 0)
    }
}
