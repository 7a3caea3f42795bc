import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardWire

/// ``GroupRepository``'s contract, the same for every store.
@Suite("Repository contract: groups", .timeLimit(.minutes(2)))
struct GroupRepositoryContractTests {
    static let t1 = "2030-01-01T00:00:01.000Z", t2 = "2030-01-01T00:00:02.000Z", t3 = "2030-01-01T00:00:03.000Z"

    @Test(arguments: StoreKind.allCases)
    func aGroupIsSeenByItsMembersUntilItIsDissolved(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        var users: [User] = []
        for name in ["ann", "bob", "cid"] {
            users.append(User(id: try await fixture.account(name).userID, username: name, displayName: name))
        }
        let (ann, bob, cid) = (users[0], users[1], users[2])
        try await store.write { transaction in
            let groups = transaction.groups
            try groups.createGroup(id: "g1", name: "team", ownerID: ann.id, at: Self.t1)
            try groups.addMember(ann.id, to: "g1", at: Self.t1)
            try groups.addMember(cid.id, to: "g1", at: Self.t1)
            try groups.addMember(bob.id, to: "g1", at: Self.t2)
            try groups.createGroup(id: "g2", name: "pair", ownerID: bob.id, at: Self.t2)
            try groups.addMember(bob.id, to: "g2", at: Self.t2)
            try groups.addMember(ann.id, to: "g2", at: Self.t2)
        }
        #expect(
            try await store.snapshot { try $0.groups.group("g1", visibleTo: bob.id) }
                == StoredGroup(id: "g1", name: "team", ownerID: ann.id, createdAt: Self.t1))
        #expect(try await store.snapshot { try $0.groups.group("g2", visibleTo: cid.id) } == nil, "not a member")
        #expect(try await store.snapshot { try $0.groups.group("nope", visibleTo: ann.id) } == nil)
        // Joined at t1 (ann and cid, ties by id / by username), then bob at t2.
        #expect(try await store.snapshot { try $0.groups.memberIDs(of: "g1") } == [ann.id, cid.id].sorted() + [bob.id])
        #expect(
            try await store.snapshot { try $0.groups.members(of: "g1") } == [
                GroupMember(user: ann, joinedAt: Self.t1), GroupMember(user: cid, joinedAt: Self.t1),
                GroupMember(user: bob, joinedAt: Self.t2),
            ])
        #expect(try await store.snapshot { try $0.groups.groupIDs(of: ann.id) } == ["g1", "g2"], "oldest first")
        try await store.write { transaction in
            try transaction.groups.rename("g1", to: "crew")
            try transaction.groups.removeMember(cid.id, from: "g1")
        }
        #expect(try await store.snapshot { try $0.groups.name(of: "g1") } == "crew")
        #expect(try await store.snapshot { try $0.groups.group("g1", visibleTo: cid.id) } == nil, "removed")
        #expect(try await store.snapshot { try $0.groups.groupIDs(of: cid.id) }.isEmpty)
        try await store.write { try $0.groups.dissolve("g2", at: Self.t3) }
        #expect(try await store.snapshot { try $0.groups.group("g2", visibleTo: bob.id) } == nil, "dissolved")
        #expect(try await store.snapshot { try $0.groups.groupIDs(of: ann.id) } == ["g1"])
        #expect(try await store.snapshot { try $0.groups.name(of: "g2") } == "pair", "kept with its history")
        #expect(try await store.snapshot { try $0.groups.name(of: "nope") } == nil)
    }
}
