import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardWire

/// ``FriendRepository``'s contract, the same for every store.
@Suite("Repository contract: the friend graph", .timeLimit(.minutes(2)))
struct FriendRepositoryContractTests {
    static let t1 = "2030-01-01T00:00:01.000Z", t2 = "2030-01-01T00:00:02.000Z", t3 = "2030-01-01T00:00:03.000Z"

    struct Rig {
        let fixture: RepositoryFixture
        let ann: User, bob: User, cid: User
        var store: ServerStore { fixture.store }

        init(_ kind: StoreKind) async throws {
            fixture = try kind.fixture()
            // Usernames sort as ann < bob < cid; ids are random.
            var users: [User] = []
            for name in ["ann", "bob", "cid"] {
                let id = try await fixture.account(name).userID
                users.append(User(id: id, username: name, displayName: name))
            }
            (ann, bob, cid) = (users[0], users[1], users[2])
        }

        func write<T: Sendable>(_ body: @escaping @Sendable (any FriendRepository) throws -> T) async throws -> T {
            try await store.write { try body($0.friends) }
        }

        func read<T: Sendable>(_ body: @escaping @Sendable (any FriendRepository) throws -> T) async throws -> T {
            try await store.snapshot { try body($0.friends) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aFriendRequestIsPendingUntilItIsSettled(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (ann, bob, cid) = (rig.ann, rig.bob, rig.cid)
        try await rig.write { try $0.createRequest(id: "r1", from: ann.id, to: bob.id, at: Self.t1) }
        try await rig.write { try $0.createRequest(id: "r2", from: cid.id, to: ann.id, at: Self.t2) }
        let r1 = FriendRequest(id: "r1", from: ann, to: bob, state: .pending, createdAt: Self.t1, updatedAt: Self.t1)
        #expect(try await rig.read { try $0.request("r1") } == r1)
        #expect(try await rig.read { try $0.request("nope") } == nil)
        #expect(
            try await rig.read { try $0.pendingRequest(between: bob.id, and: ann.id) } == r1,
            "either order names the pair")
        #expect(try await rig.read { try $0.pendingRequest(between: bob.id, and: cid.id) } == nil)
        #expect(
            try await rig.read { try $0.pendingRequests(involving: ann.id) }.map(\.id) == ["r1", "r2"],
            "sent and received, oldest first")
        try await rig.write { try $0.settleRequest("r1", as: .declined, at: Self.t3) }
        #expect(
            try await rig.read { try $0.request("r1") }.map { "\($0.state) \($0.updatedAt)" } == "declined \(Self.t3)")
        #expect(try await rig.read { try $0.pendingRequests(involving: ann.id) }.map(\.id) == ["r2"])
        #expect(try await rig.write { try $0.cancelPendingRequests(between: ann.id, and: cid.id, at: Self.t3) } == 1)
        #expect(try await rig.write { try $0.cancelPendingRequests(between: ann.id, and: cid.id, at: Self.t3) } == 0)
        #expect(try await rig.read { try $0.request("r2") }?.state == .cancelled)
    }

    @Test(arguments: StoreKind.allCases)
    func friendshipsAndConversationsAreOnePerPair(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (ann, bob, cid) = (rig.ann, rig.bob, rig.cid)
        try await rig.write { friends in
            try friends.createConversation(id: "c-ab", between: bob.id, and: ann.id, at: Self.t1)
            try friends.createConversation(id: "c-ac", between: ann.id, and: cid.id, at: Self.t2)
            try friends.addFriendship(between: bob.id, and: ann.id, conversationID: "c-ab", at: Self.t1)
            try friends.addFriendship(between: cid.id, and: ann.id, conversationID: "c-ac", at: Self.t2)
        }
        #expect(try await rig.read { try $0.conversationID(between: ann.id, and: bob.id) } == "c-ab")
        #expect(try await rig.read { try $0.conversationID(between: bob.id, and: cid.id) } == nil)
        let stored = try #require(try await rig.read { try $0.conversation("c-ab") })
        #expect(
            Set([stored.userA, stored.userB]) == [ann.id, bob.id] && stored.userA < stored.userB
                && stored.createdAt == Self.t1)
        #expect(try await rig.read { try $0.conversationIDs(of: ann.id) } == ["c-ab", "c-ac"])
        #expect(
            try await rig.read { try $0.friendship(between: ann.id, and: bob.id) }
                == Friendship(conversationID: "c-ab", since: Self.t1))
        #expect(
            try await rig.read { try $0.friends(of: ann.id) } == [
                Friend(user: bob, conversationId: "c-ab", since: Self.t1),
                Friend(user: cid, conversationId: "c-ac", since: Self.t2),
            ], "by username")
        // Unfriending leaves the conversation.
        try await rig.write { try $0.removeFriendship(between: ann.id, and: bob.id) }
        #expect(try await rig.read { try $0.friendship(between: bob.id, and: ann.id) } == nil)
        #expect(try await rig.read { try $0.friends(of: bob.id) }.isEmpty)
        #expect(try await rig.read { try $0.conversationID(between: ann.id, and: bob.id) } == "c-ab")
    }

    @Test(arguments: StoreKind.allCases)
    func aBlockIsOneWayToListButBlocksTheInteractionBothWays(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (ann, bob, cid) = (rig.ann, rig.bob, rig.cid)
        try await rig.write { friends in
            try friends.addBlock(blocker: ann.id, blocked: cid.id, at: Self.t1)
            try friends.addBlock(blocker: ann.id, blocked: bob.id, at: Self.t2)
        }
        #expect(try await rig.read { try $0.isBlocked(between: cid.id, and: ann.id) })
        #expect(try await rig.read { try !$0.isBlocked(between: bob.id, and: cid.id) })
        #expect(try await rig.read { try $0.blockedAt(blocker: ann.id, blocked: cid.id) } == Self.t1)
        #expect(try await rig.read { try $0.blockedAt(blocker: cid.id, blocked: ann.id) } == nil)
        #expect(
            try await rig.read { try $0.blocks(by: ann.id) } == [
                Block(user: bob, createdAt: Self.t2), Block(user: cid, createdAt: Self.t1),
            ])
        #expect(try await rig.read { try $0.blocks(by: bob.id) }.isEmpty)
        #expect(try await rig.write { try $0.removeBlock(blocker: ann.id, blocked: cid.id) })
        #expect(try await !rig.write { try $0.removeBlock(blocker: ann.id, blocked: cid.id) })
        #expect(try await rig.read { try !$0.isBlocked(between: ann.id, and: cid.id) })
    }
}
