import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardWire

/// ``AccountRepository``'s contract, the same for every store.
@Suite("Repository contract: accounts and sessions", .timeLimit(.minutes(2)))
struct AccountRepositoryContractTests {
    static let hashA: [UInt8] = Array(repeating: 0xa1, count: 32), hashB: [UInt8] = Array(repeating: 0xb2, count: 32)

    @Test(arguments: StoreKind.allCases)
    func aUserIsCreatedOncePerUsernameAndFoundByIdAndName(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let erin = User(id: "u-erin", username: "erin", displayName: "Erin")
        #expect(try await store.write { try $0.accounts.createUser(erin, passwordHash: "hash-1", at: $0.timestamp) })
        let twin = User(id: "u-twin", username: "erin", displayName: "Another Erin")
        #expect(
            try await !store.write { try $0.accounts.createUser(twin, passwordHash: "hash-2", at: $0.timestamp) },
            "the name is taken")
        #expect(try await store.snapshot { try $0.accounts.user(id: "u-twin") } == nil, "nothing of it was written")
        #expect(try await store.snapshot { try $0.accounts.user(id: "u-erin") } == erin)
        #expect(try await store.snapshot { try $0.accounts.user(username: "erin") } == erin)
        #expect(try await store.snapshot { try $0.accounts.user(username: "nobody") } == nil)
        #expect(
            try await store.snapshot { try $0.accounts.credentials(forUsername: "erin") }
                == StoredCredentials(user: erin, passwordHash: "hash-1"))
        #expect(try await store.snapshot { try $0.accounts.credentials(forUsername: "nobody") } == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func aSessionIsFoundByItsTokenHashUntilItEnds(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let frank = User(id: "u-frank", username: "frank", displayName: "Frank")
        try await store.write { transaction in
            _ = try transaction.accounts.createUser(frank, passwordHash: "h", at: transaction.timestamp)
            try transaction.accounts.startSession(
                id: "s-1", userID: frank.id, tokenHash: Self.hashA, at: transaction.timestamp)
            try transaction.accounts.startSession(
                id: "s-2", userID: frank.id, tokenHash: Self.hashB, at: transaction.timestamp)
        }
        #expect(
            try await store.snapshot { try $0.accounts.principal(forTokenHash: Self.hashA) }
                == Principal(user: frank, sessionID: "s-1"))
        #expect(try await store.snapshot { try $0.accounts.principal(forTokenHash: Self.hashB) }?.sessionID == "s-2")
        #expect(
            try await store.snapshot { try $0.accounts.principal(forTokenHash: Array(repeating: 0, count: 32)) } == nil)
        #expect(try await store.snapshot { try $0.accounts.isSessionLive("s-1") })
        try await store.write { try $0.accounts.endSession("s-1", at: "2030-01-01T00:00:01.000Z") }
        try await store.write { try $0.accounts.endSession("s-1", at: "2030-01-01T00:00:09.000Z") }
        #expect(
            try await fixture.sessionEndedAt("s-1") == "2030-01-01T00:00:01.000Z",
            "ended once: a second end changes nothing")
        #expect(try await store.snapshot { try $0.accounts.principal(forTokenHash: Self.hashA) } == nil)
        #expect(try await !store.snapshot { try $0.accounts.isSessionLive("s-1") })
        #expect(try await store.snapshot { try $0.accounts.isSessionLive("s-2") }, "the other session lives on")
        #expect(try await !store.snapshot { try $0.accounts.isSessionLive("s-unknown") })
    }

    @Test(arguments: StoreKind.allCases)
    func sessionsExpireIdleOrOldAndEndTogetherButOne(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let store = fixture.store
        let gina = User(id: "u-gina", username: "gina", displayName: "Gina")
        try await store.write { transaction in
            _ = try transaction.accounts.createUser(gina, passwordHash: "old", at: transaction.timestamp)
            try transaction.accounts.startSession(
                id: "s-1", userID: gina.id, tokenHash: Self.hashA, at: transaction.timestamp, atMS: 1_000)
            try transaction.accounts.startSession(
                id: "s-2", userID: gina.id, tokenHash: Self.hashB, at: transaction.timestamp, atMS: 2_000)
        }
        func found(_ hash: [UInt8], startedAfter: Int64, seenAfter: Int64) async throws -> Int64? {
            try await store.snapshot {
                try $0.accounts.principal(forTokenHash: hash, startedAfterMS: startedAfter, seenAfterMS: seenAfter)?
                    .seenAtMS
            }
        }
        #expect(try await found(Self.hashA, startedAfter: 999, seenAfter: 999) == 1_000)
        #expect(try await found(Self.hashA, startedAfter: 999, seenAfter: 1_000) == nil, "unused since 1 000: idle")
        #expect(try await found(Self.hashA, startedAfter: 1_000, seenAfter: 0) == nil, "started at 1 000: too old")
        try await store.write { try $0.accounts.touchSession("s-1", at: 5_000) }
        try await store.write { try $0.accounts.touchSession("s-1", at: 4_000) }
        #expect(
            try await found(Self.hashA, startedAfter: 999, seenAfter: 4_500) == 5_000,
            "used at 5 000; an older touch changes nothing")
        #expect(
            try await found(Self.hashA, startedAfter: 1_000, seenAfter: 0) == nil, "use does not make a session younger"
        )
        let ended = try await store.write { try $0.accounts.endSessions(of: gina.id, keeping: "s-2", at: $0.timestamp) }
        #expect(ended == ["s-1"])
        #expect(try await !store.snapshot { try $0.accounts.isSessionLive("s-1") })
        #expect(try await store.snapshot { try $0.accounts.isSessionLive("s-2") })
        #expect(
            try await store.write { try $0.accounts.endSessions(of: gina.id, keeping: nil, at: $0.timestamp) } == [
                "s-2"
            ])
        try await store.write { try $0.accounts.setPasswordHash("new", of: gina.id) }
        #expect(try await store.snapshot { try $0.accounts.credentials(forUsername: "gina") }?.passwordHash == "new")
    }
}
