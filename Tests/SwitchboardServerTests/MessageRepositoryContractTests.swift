import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardWire

/// ``MessageRepository``'s contract, the same for every store.
@Suite("Repository contract: messages and read markers", .timeLimit(.minutes(2)))
struct MessageRepositoryContractTests {
    static func stamp(_ second: Int) -> String { String(format: "2030-01-01T00:00:%02d.000Z", second) }

    @Test(arguments: StoreKind.allCases)
    func messagesArePagedNewestBackAndFoundByTheirClientID(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let ann = try await fixture.account("ann"), bob = try await fixture.account("bob")
        let conversation = try await fixture.world.befriend(ann.person, bob.person)
        let scope = MessageScope.conversation(conversation)
        let messages = (1...5).map { index in
            Message(
                id: "m\(index)", conversationId: conversation, groupId: nil,
                senderId: index % 2 == 0 ? bob.userID : ann.userID,
                text: "text \(index)", createdAt: Self.stamp(index))
        }
        try await store.write { transaction in
            for message in messages {
                try transaction.messages.insert(message, clientID: message.id == "m3" ? "client-3" : nil)
            }
        }
        let newest = try #require(try await store.snapshot { try $0.messages.page(in: scope, before: nil, limit: 2) })
        #expect(newest.messages == Array(messages[3...]) && newest.hasMore, "the newest two, oldest first")
        let older = try #require(try await store.snapshot { try $0.messages.page(in: scope, before: "m4", limit: 10) })
        #expect(older.messages == Array(messages[..<3]) && !older.hasMore)
        #expect(try await store.snapshot { try $0.messages.page(in: scope, before: "nope", limit: 10) } == nil)
        #expect(
            try await store.snapshot { try $0.messages.page(in: .group(conversation), before: "m4", limit: 10) } == nil,
            "another scope's")
        #expect(
            try await store.snapshot { try $0.messages.page(in: .group("g-empty"), before: nil, limit: 10) }
                == MessagePage(messages: [], hasMore: false))
        #expect(
            try await store.snapshot { try $0.messages.message(sentBy: ann.userID, clientID: "client-3") }
                == messages[2])
        #expect(
            try await store.snapshot { try $0.messages.message(sentBy: bob.userID, clientID: "client-3") } == nil,
            "a client id is the sender's")
    }

    @Test(arguments: StoreKind.allCases)
    func aReadMarkerOnlyMovesForward(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let ann = try await fixture.account("ann"), bob = try await fixture.account("bob")
        let group = try await fixture.world.group(ann.person, [bob.person])
        let scope = MessageScope.group(group)
        try await store.write { transaction in
            for index in 1...3 {
                try transaction.messages.insert(
                    Message(
                        id: "g\(index)", conversationId: nil, groupId: group, senderId: ann.userID, text: "t",
                        createdAt: Self.stamp(index)),
                    clientID: nil)
            }
        }
        #expect(
            try await store.write { try $0.messages.markRead("g2", in: scope, by: bob.userID, at: Self.stamp(10)) }
                == true)
        #expect(
            try await store.write { try $0.messages.markRead("g1", in: scope, by: bob.userID, at: Self.stamp(11)) }
                == false, "not backward")
        #expect(
            try await store.write { try $0.messages.markRead("g2", in: scope, by: bob.userID, at: Self.stamp(12)) }
                == false)
        #expect(
            try await store.write { try $0.messages.markRead("nope", in: scope, by: bob.userID, at: Self.stamp(12)) }
                == nil)
        #expect(
            try await store.write { try $0.messages.markRead("g3", in: scope, by: ann.userID, at: Self.stamp(13)) }
                == true)
        let markers = try await store.snapshot { try $0.messages.readMarkers(in: scope) }
        let expected = [
            ReadMarker(userId: bob.userID, messageId: "g2", updatedAt: Self.stamp(10)),
            ReadMarker(userId: ann.userID, messageId: "g3", updatedAt: Self.stamp(13)),
        ]
        #expect(markers == expected.sorted { $0.userId < $1.userId }, "by user id")
        #expect(
            try await store.write { try $0.messages.markRead("g3", in: scope, by: bob.userID, at: Self.stamp(14)) }
                == true)
        #expect(
            try await store.snapshot { try $0.messages.readMarkers(in: scope) }.first { $0.userId == bob.userID }?
                .messageId == "g3")
    }
}
