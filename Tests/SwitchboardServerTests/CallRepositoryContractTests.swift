import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardCore
import SwitchboardWire

/// ``CallRepository``'s contract, the same for every store.
@Suite("Repository contract: calls", .timeLimit(.minutes(2)))
struct CallRepositoryContractTests {
    static let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    static func ringing(
        _ id: String, from caller: String, to invitees: [String], scope: String, at time: Date = t0
    ) -> CallRecord {
        CallRecord(
            id: id, scopeKind: .conversation, scopeID: scope, mode: .audio, state: .ringing, endReason: nil,
            createdBy: caller,
            createdAt: time, answeredAt: nil, endedAt: nil, ringDeadline: time.addingTimeInterval(45),
            roomName: "room_\(id)", emptySince: nil,
            invitations: invitees.map { CallInvitation(userID: $0, state: .ringing, updatedAt: time) }, participants: []
        )
    }

    static func answered(_ call: CallRecord, by userID: String, at time: Date) -> CallRecord {
        var call = call
        call.state = .active
        call.answeredAt = time
        call.invitations = call.invitations.map {
            $0.userID == userID ? CallInvitation(userID: userID, state: .accepted, updatedAt: time) : $0
        }
        call.participants = [
            CallParticipant(userID: call.createdBy, joinedAt: time), CallParticipant(userID: userID, joinedAt: time),
        ]
        return call
    }

    static func ended(_ call: CallRecord, at time: Date, reason: CallInfo.EndReason = .completed) -> CallRecord {
        var call = call
        call.state = .ended
        call.endReason = reason
        call.endedAt = time
        call.participants = call.participants.map {
            CallParticipant(userID: $0.userID, joinedAt: $0.joinedAt, leftAt: time)
        }
        return call
    }

    struct Rig {
        let fixture: RepositoryFixture
        let ann: String, bob: String, cid: String
        var store: ServerStore { fixture.store }

        init(_ kind: StoreKind) async throws {
            fixture = try kind.fixture()
            ann = try await fixture.account("ann").userID
            bob = try await fixture.account("bob").userID
            cid = try await fixture.account("cid").userID
        }

        func write<T: Sendable>(_ body: @escaping @Sendable (any CallRepository) throws -> T) async throws -> T {
            try await store.write { try body($0.calls) }
        }

        func read<T: Sendable>(_ body: @escaping @Sendable (any CallRepository) throws -> T) async throws -> T {
            try await store.snapshot { try body($0.calls) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aCallIsStoredAndLoadedWholeAndUpdatedOnlyFromItsVersion(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let call = Self.ringing("k1", from: rig.ann, to: [rig.bob, rig.cid], scope: "s1")
        try await rig.write { try $0.insert(call, clientID: "client-1") }
        let stored = try #require(try await rig.read { try $0.load("k1") })
        #expect(stored.call == call)
        #expect(try await rig.read { try $0.call(createdBy: rig.ann, clientID: "client-1") }?.call.id == "k1")
        #expect(
            try await rig.read { try $0.call(createdBy: rig.bob, clientID: "client-1") } == nil,
            "a client id is the caller's")
        #expect(try await rig.read { try $0.load("nope") } == nil)
        let active = Self.answered(call, by: rig.bob, at: Self.t0.addingTimeInterval(3))
        #expect(try await rig.write { try $0.update(active, from: stored.version) })
        #expect(try await !rig.write { try $0.update(active, from: stored.version) }, "the version moved on")
        let now = try #require(try await rig.read { try $0.load("k1") })
        #expect(now.call == active && now.version != stored.version)
    }

    @Test(arguments: StoreKind.allCases)
    func aUserIsInOneLiveCallAndAScopeHasOne(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (ann, bob, cid) = (rig.ann, rig.bob, rig.cid)
        let call = Self.ringing("k1", from: ann, to: [bob], scope: "s1")
        try await rig.write { try $0.insert(call, clientID: "c1") }
        // While it rings the caller occupies it; the invitee is not busy yet.
        #expect(try await rig.read { try $0.busyUsers([ann, bob, cid], excluding: nil) } == [ann])
        #expect(try await rig.read { try $0.busyUsers([ann], excluding: "k1") }.isEmpty)
        #expect(try await rig.read { try $0.liveCallID(scopeKind: .conversation, scopeID: "s1") } == "k1")
        #expect(try await rig.read { try $0.liveCallID(scopeKind: .group, scopeID: "s1") } == nil)
        await #expect(throws: CallTransitionError.busy) {
            try await rig.write { try $0.insert(Self.ringing("k2", from: ann, to: [cid], scope: "s2"), clientID: "c2") }
        }
        await #expect(throws: CallTransitionError.busy) {
            try await rig.write { try $0.insert(Self.ringing("k3", from: cid, to: [bob], scope: "s1"), clientID: "c3") }
        }
        #expect(try await rig.read { try $0.load("k2") } == nil, "nothing of a refused call stays")
        #expect(try await rig.read { try $0.load("k3") } == nil)
        // Active: both present participants occupy it, so bob cannot be put in another one.
        let stored = try #require(try await rig.read { try $0.load("k1") })
        try await rig.write { _ = try $0.update(Self.answered(call, by: bob, at: Self.t0), from: stored.version) }
        #expect(try await rig.read { try $0.busyUsers([ann, bob, cid], excluding: nil) } == [ann, bob])
        let second = Self.ringing("k4", from: cid, to: [bob], scope: "s4")
        try await rig.write { try $0.insert(second, clientID: "c4") }
        let secondStored = try #require(try await rig.read { try $0.load("k4") })
        await #expect(throws: CallTransitionError.busy) {
            try await rig.write {
                _ = try $0.update(Self.answered(second, by: bob, at: Self.t0), from: secondStored.version)
            }
        }
        // Ended: nobody occupies it and the scope is free.
        let again = try #require(try await rig.read { try $0.load("k1") })
        try await rig.write {
            _ = try $0.update(Self.ended(again.call, at: Self.t0.addingTimeInterval(60)), from: again.version)
        }
        #expect(try await rig.read { try $0.busyUsers([ann, bob], excluding: nil) }.isEmpty)
        #expect(try await rig.read { try $0.liveCallID(scopeKind: .conversation, scopeID: "s1") } == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func theListsTheReadsAndTimersNeed(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (ann, bob, cid) = (rig.ann, rig.bob, rig.cid)
        // Two ended calls in scope s1, one ringing (ann → bob), one answered (cid → bob).
        for (index, id) in ["old", "older"].enumerated() {
            let call = Self.ringing(
                id, from: ann, to: [bob], scope: "s1", at: Self.t0.addingTimeInterval(Double(index)))
            try await rig.write { try $0.insert(call, clientID: id) }
            let stored = try #require(try await rig.read { try $0.load(id) })
            try await rig.write {
                _ = try $0.update(
                    Self.ended(call, at: Self.t0.addingTimeInterval(100 - Double(index)), reason: .cancelled),
                    from: stored.version)
            }
        }
        #expect(
            try await rig.read { try $0.endedCallIDs(scopeKind: .conversation, scopeID: "s1", limit: 10) } == [
                "old", "older",
            ], "newest end first")
        #expect(
            try await rig.read { try $0.endedCallIDs(scopeKind: .conversation, scopeID: "s1", limit: 1) } == ["old"])
        let ringing = Self.ringing("ring", from: ann, to: [bob], scope: "s2", at: Self.t0)
        try await rig.write { try $0.insert(ringing, clientID: "ring") }
        let talk = Self.ringing("talk", from: cid, to: [bob], scope: "s3", at: Self.t0.addingTimeInterval(1))
        try await rig.write { try $0.insert(talk, clientID: "talk") }
        #expect(
            try await rig.read { try $0.liveCallIDs(involving: bob) } == ["ring", "talk"],
            "ringing invitations, oldest first")
        #expect(try await rig.read { try $0.liveCallIDs(involving: ann) } == ["ring"], "the caller while it rings")
        #expect(try await rig.read { try $0.rings("ring", userID: bob) })
        #expect(try await !rig.read { try $0.rings("ring", userID: ann) })
        let talkStored = try #require(try await rig.read { try $0.load("talk") })
        try await rig.write {
            _ = try $0.update(Self.answered(talk, by: bob, at: Self.t0.addingTimeInterval(2)), from: talkStored.version)
        }
        #expect(try await rig.read { try $0.liveCallIDs(involving: cid) } == ["talk"], "a present participant")
        #expect(try await rig.read { try !$0.rings("talk", userID: bob) })
        #expect(try await rig.read { try $0.activeRooms() }.map { "\($0.callID):\($0.roomName)" } == ["talk:room_talk"])
        // Ring deadlines: the ringing call's passes at t0 + 45 s.
        #expect(
            try await rig.read {
                try $0.ringTimedOutCallIDs(at: CallStore.milliseconds(Self.t0.addingTimeInterval(44)))
            }.isEmpty)
        #expect(
            try await rig.read {
                try $0.ringTimedOutCallIDs(at: CallStore.milliseconds(Self.t0.addingTimeInterval(46)))
            } == ["ring"])
    }
}
