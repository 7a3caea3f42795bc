import Foundation
import Testing
@testable import SwitchboardServer

/// ``DeviceRepository``'s contract, the same for every store.
@Suite("Repository contract: push devices", .timeLimit(.minutes(2)))
struct DeviceRepositoryContractTests {
    static let platform = DeviceRoutes.voipPlatform

    static func registration(_ deviceID: String, _ account: RepositoryFixture.Account, token: String, environment: String = "sandbox")
        -> DeviceRegistration
    {
        DeviceRegistration(
            deviceID: deviceID, userID: account.userID, sessionID: account.sessionID, platform: platform, token: token, environment: environment)
    }

    static func register(_ device: DeviceRegistration, in store: ServerStore) async throws {
        try await store.write { try $0.devices.register(device, at: $0.timestamp) }
    }

    static func targets(_ account: RepositoryFixture.Account, in store: ServerStore, platform: String = platform) async throws -> [PushTarget] {
        try await store.snapshot { try $0.devices.targets(of: account.userID, platform: platform) }
    }

    @Test(arguments: StoreKind.allCases)
    func aRegisteredDeviceIsATargetUntilItIsRegisteredAgainOrRemoved(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let alice = try await fixture.account("alice"), bob = try await fixture.account("bob")
        let store = fixture.store
        try await Self.register(Self.registration("d-1", alice, token: "aa01"), in: store)
        #expect(try await Self.targets(alice, in: store) == [PushTarget(deviceID: "d-1", token: "aa01", environment: "sandbox")])
        #expect(try await Self.targets(alice, in: store, platform: "android-fcm").isEmpty, "another platform's devices are apart")
        #expect(try await store.snapshot { try $0.devices.isLive(token: "aa01", of: alice.userID) })
        #expect(try await !store.snapshot { try $0.devices.isLive(token: "aa01", of: bob.userID) })
        // Registered again: the new token and environment replace the old ones.
        try await Self.register(Self.registration("d-1", alice, token: "aa02", environment: "production"), in: store)
        #expect(try await Self.targets(alice, in: store) == [PushTarget(deviceID: "d-1", token: "aa02", environment: "production")])
        #expect(try await !store.snapshot { try $0.devices.isLive(token: "aa01", of: alice.userID) })
        // Only its owner removes it, once.
        #expect(try await !store.write { try $0.devices.remove(deviceID: "d-1", of: bob.userID) })
        #expect(try await store.write { try $0.devices.remove(deviceID: "d-1", of: alice.userID) })
        #expect(try await !store.write { try $0.devices.remove(deviceID: "d-1", of: alice.userID) })
        #expect(try await Self.targets(alice, in: store).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aTokenBelongsToOneInstallation(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let alice = try await fixture.account("alice"), bob = try await fixture.account("bob")
        let store = fixture.store
        try await Self.register(Self.registration("d-1", alice, token: "bb01"), in: store)
        try await Self.register(Self.registration("d-2", alice, token: "bb02"), in: store)
        // Another installation (here another user's) registers the same token: the first row goes.
        try await Self.register(Self.registration("d-3", bob, token: "bb01"), in: store)
        #expect(try await Self.targets(alice, in: store).map(\.deviceID) == ["d-2"])
        #expect(try await Self.targets(bob, in: store).map(\.deviceID) == ["d-3"])
        // The same device moving to another user takes its row along.
        try await Self.register(Self.registration("d-2", bob, token: "bb02"), in: store)
        #expect(try await Self.targets(alice, in: store).isEmpty)
        #expect(try await Set(Self.targets(bob, in: store).map(\.deviceID)) == ["d-2", "d-3"])
    }

    @Test(arguments: StoreKind.allCases)
    func onlyDevicesOfLiveSessionsAreTargetsAndLogoutUnbindsItsOwn(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let phone = try await fixture.account("carol")
        let tablet = try await fixture.signIn(phone, name: "carol")
        let laptop = try await fixture.signIn(phone, name: "carol")
        let store = fixture.store
        try await Self.register(Self.registration("phone", phone, token: "cc01"), in: store)
        try await Self.register(Self.registration("tablet", tablet, token: "cc02"), in: store)
        try await Self.register(Self.registration("laptop", laptop, token: "cc03"), in: store)
        #expect(try await Self.targets(phone, in: store).count == 3)
        // A session that ended without unbinding: its device stays stored but is no target.
        try await fixture.endSessionOnly(laptop)
        #expect(try await Set(Self.targets(phone, in: store).map(\.deviceID)) == ["phone", "tablet"])
        #expect(try await !store.snapshot { try $0.devices.isLive(token: "cc03", of: phone.userID) })
        // Removing a session's devices leaves the others.
        try await store.write { try $0.devices.removeAll(boundTo: tablet.sessionID) }
        #expect(try await Self.targets(phone, in: store).map(\.deviceID) == ["phone"])
        // Logout does the same through the API.
        await fixture.signOut(phone)
        #expect(try await Self.targets(phone, in: store).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aForgottenTokenGoesAndADoubtedOneGoesAtTheSecondDoubt(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let dave = try await fixture.account("dave")
        let store = fixture.store
        try await Self.register(Self.registration("d-1", dave, token: "dd01"), in: store)
        try await Self.register(Self.registration("d-2", dave, token: "dd02"), in: store)
        try await store.write { try $0.devices.forget(token: "dd01") }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"])
        try await store.write { try $0.devices.doubt(token: "dd02") }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"], "one doubt is not enough")
        // Registering again clears the doubts.
        try await Self.register(Self.registration("d-2", dave, token: "dd02"), in: store)
        try await store.write { try $0.devices.doubt(token: "dd02") }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"])
        try await store.write { try $0.devices.doubt(token: "dd02") }
        #expect(try await Self.targets(dave, in: store).isEmpty)
        // Unknown tokens change nothing.
        try await store.write { try $0.devices.forget(token: "ffff") }
        try await store.write { try $0.devices.doubt(token: "ffff") }
    }
}
