import Foundation
import Testing
@testable import SwitchboardServer

/// ``DeviceRepository``'s contract, the same for every store.
@Suite("Repository contract: push devices", .timeLimit(.minutes(2)))
struct DeviceRepositoryContractTests {
    static let channel = DeviceRoutes.voipPlatform

    static func registration(
        _ deviceID: String, _ account: RepositoryFixture.Account, token: String, environment: String = "sandbox",
        channel: String = channel,
        brand: String? = nil
    ) -> DeviceRegistration {
        DeviceRegistration(
            deviceID: deviceID, userID: account.userID, sessionID: account.sessionID, channel: channel,
            platform: channel.hasPrefix("ios-") ? "ios" : "android", brand: brand, token: token,
            environment: channel.hasPrefix("ios-") ? environment : "")
    }

    static func register(_ device: DeviceRegistration, in store: ServerStore) async throws {
        try await store.write { try $0.devices.register(device, at: $0.timestamp) }
    }

    static func targets(
        _ account: RepositoryFixture.Account, in store: ServerStore, channel: String = channel
    ) async throws -> [PushTarget] {
        try await store.snapshot { try $0.devices.targets(of: account.userID, channel: channel) }
    }

    @Test(arguments: StoreKind.allCases)
    func aRegisteredDeviceIsATargetUntilItIsRegisteredAgainOrRemoved(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let alice = try await fixture.account("alice"), bob = try await fixture.account("bob")
        let store = fixture.store
        try await Self.register(Self.registration("d-1", alice, token: "aa01"), in: store)
        #expect(
            try await Self.targets(alice, in: store) == [
                PushTarget(deviceID: "d-1", token: "aa01", environment: "sandbox")
            ])
        #expect(try await Self.targets(alice, in: store, channel: "fcm").isEmpty, "another channel's tokens are apart")
        #expect(
            try await store.snapshot { try $0.devices.isLive(token: "aa01", channel: Self.channel, of: alice.userID) })
        #expect(
            try await !store.snapshot { try $0.devices.isLive(token: "aa01", channel: "ios-alert", of: alice.userID) })
        #expect(
            try await !store.snapshot { try $0.devices.isLive(token: "aa01", channel: Self.channel, of: bob.userID) })
        // Registered again: the new token and environment replace the old ones.
        try await Self.register(Self.registration("d-1", alice, token: "aa02", environment: "production"), in: store)
        #expect(
            try await Self.targets(alice, in: store) == [
                PushTarget(deviceID: "d-1", token: "aa02", environment: "production")
            ])
        #expect(
            try await !store.snapshot { try $0.devices.isLive(token: "aa01", channel: Self.channel, of: alice.userID) })
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
        // Another user cannot take a token or an installation of a live session's.
        await #expect(throws: DeviceRegistrationConflict.tokenTaken(channel: Self.channel)) {
            try await Self.register(Self.registration("d-3", bob, token: "bb01"), in: store)
        }
        await #expect(throws: DeviceRegistrationConflict.deviceIDTaken) {
            try await Self.register(Self.registration("d-2", bob, token: "bb09"), in: store)
        }
        #expect(try await Self.targets(alice, in: store).map(\.deviceID) == ["d-1", "d-2"], "nothing moved")
        #expect(try await Self.targets(bob, in: store).isEmpty)
        // Once her session ended, the installation's own registration may bind them to bob;
        // her rows go, none is moved.
        try await store.write { try $0.accounts.endSession(alice.sessionID, at: $0.timestamp) }
        try await Self.register(Self.registration("d-3", bob, token: "bb01"), in: store)
        try await Self.register(Self.registration("d-2", bob, token: "bb02"), in: store)
        #expect(try await Set(Self.targets(bob, in: store).map(\.deviceID)) == ["d-2", "d-3"])
        let rows = try await store.read {
            try $0.query("SELECT count(*) AS n FROM push_devices WHERE user_id = ?", [.text(alice.userID)]).first?.int(
                "n")
        }
        #expect(rows == 0, "her rows of d-1 (the token's old installation) and d-2 are gone")
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
        #expect(
            try await !store.snapshot { try $0.devices.isLive(token: "cc03", channel: Self.channel, of: phone.userID) })
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
        try await store.write { try $0.devices.forget(token: "dd01", channel: Self.channel) }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"])
        try await store.write { try $0.devices.doubt(token: "dd02", channel: Self.channel) }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"], "one doubt is not enough")
        // Registering again clears the doubts.
        try await Self.register(Self.registration("d-2", dave, token: "dd02"), in: store)
        try await store.write { try $0.devices.doubt(token: "dd02", channel: Self.channel) }
        #expect(try await Self.targets(dave, in: store).map(\.deviceID) == ["d-2"])
        try await store.write { try $0.devices.doubt(token: "dd02", channel: Self.channel) }
        #expect(try await Self.targets(dave, in: store).isEmpty)
        // Unknown tokens change nothing.
        try await store.write { try $0.devices.forget(token: "ffff", channel: Self.channel) }
        try await store.write { try $0.devices.doubt(token: "ffff", channel: Self.channel) }
    }

    @Test(arguments: StoreKind.allCases)
    func aDeviceHoldsOneTokenPerChannelAndKeepsOnlyTheOnesItListsAgain(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let erin = try await fixture.account("erin"), frank = try await fixture.account("frank")
        let store = fixture.store
        try await Self.register(Self.registration("phone", erin, token: "ee01"), in: store)
        try await Self.register(Self.registration("phone", erin, token: "ee02", channel: "ios-alert"), in: store)
        try await Self.register(
            Self.registration("droid", erin, token: "fcm:AAA-1", channel: "fcm", brand: "huawei"), in: store)
        try await Self.register(
            Self.registration("droid", erin, token: "HW.001", channel: "huawei", brand: "huawei"), in: store)
        #expect(try await Self.targets(erin, in: store).map(\.token) == ["ee01"])
        #expect(try await Self.targets(erin, in: store, channel: "ios-alert").map(\.token) == ["ee02"])
        let devices = try await store.snapshot { try $0.devices.devices(of: erin.userID) }
        #expect(Set(devices.map(\.deviceID)) == ["phone", "droid"] && devices.count == 2)
        let phone = try #require(devices.first { $0.deviceID == "phone" }),
            droid = try #require(devices.first { $0.deviceID == "droid" })
        #expect(Set(phone.tokens.keys) == ["ios-voip", "ios-alert"] && phone.platform == "ios" && phone.brand == nil)
        #expect(Set(droid.tokens.keys) == ["fcm", "huawei"] && droid.platform == "android" && droid.brand == "huawei")
        #expect(droid.tokens["fcm"] == PushTarget(deviceID: "droid", token: "fcm:AAA-1", environment: ""))
        // The same token string on two channels is two tokens.
        try await Self.register(Self.registration("phone", erin, token: "HW.001", channel: "ios-alert"), in: store)
        #expect(try await Self.targets(erin, in: store, channel: "huawei").map(\.deviceID) == ["droid"])
        // The device says it has only its FCM token now: the other goes.
        try await store.write { try $0.devices.keepOnly(channels: ["fcm"], ofDevice: "droid", of: erin.userID) }
        #expect(try await Self.targets(erin, in: store, channel: "huawei").isEmpty)
        #expect(try await Self.targets(erin, in: store, channel: "fcm").count == 1)
        // Another user's keepOnly touches nothing of hers.
        try await store.write { try $0.devices.keepOnly(channels: [], ofDevice: "droid", of: frank.userID) }
        #expect(try await Self.targets(erin, in: store, channel: "fcm").count == 1)
        // A forgotten token goes on its channel only.
        try await store.write { try $0.devices.forget(token: "HW.001", channel: "huawei") }
        #expect(try await Self.targets(erin, in: store, channel: "ios-alert").map(\.token) == ["HW.001"])
        // Another user's live installation is not theirs to take: its id and its tokens are refused.
        await #expect(throws: DeviceRegistrationConflict.deviceIDTaken) {
            try await Self.register(Self.registration("phone", frank, token: "ff01"), in: store)
        }
        await #expect(throws: DeviceRegistrationConflict.tokenTaken(channel: Self.channel)) {
            try await Self.register(Self.registration("frank-phone", frank, token: "ee01"), in: store)
        }
        #expect(try await Self.targets(erin, in: store).map(\.token) == ["ee01"], "nothing moved")
        // A reinstalled app: its VoIP token shows up under a new device id, so the old
        // installation goes with all its tokens (its alert token must not reach anyone).
        try await Self.register(Self.registration("phone-2", erin, token: "ee01"), in: store)
        #expect(try await Self.targets(erin, in: store, channel: "ios-alert").isEmpty)
        #expect(try await Self.targets(erin, in: store).map(\.deviceID) == ["phone-2"])
        // Once her session ended, an installation of hers may be registered by frank; nothing of hers follows.
        try await store.write { try $0.accounts.endSession(erin.sessionID, at: $0.timestamp) }
        try await Self.register(
            Self.registration("droid", frank, token: "fcm:FRANK", channel: "fcm", brand: "huawei"), in: store)
        #expect(
            try await store.snapshot { try $0.devices.devices(of: frank.userID) }.first?.tokens.keys.sorted() == ["fcm"]
        )
        try await Self.register(Self.registration("phone", frank, token: "ee09"), in: store)
        // Removing the device removes all its tokens.
        #expect(try await store.write { try $0.devices.remove(deviceID: "phone", of: frank.userID) })
        #expect(try await store.snapshot { try $0.devices.devices(of: frank.userID) }.map(\.deviceID) == ["droid"])
    }

    /// The stale sweep removes exactly the tokens registered before the moment; a token's last
    /// delivery and failure stay with it; its locale is kept across registrations that name none.
    /// (Its moments lie in 2099: a server's own hourly sweep, on today's clock, leaves them alone.)
    @Test(arguments: StoreKind.allCases)
    func staleTokensGoAndEachKeepsItsOutcomesAndLocale(kind: StoreKind) async throws {
        let fixture = try kind.fixture()
        defer { fixture.close() }
        let alice = try await fixture.account("alice")
        let store = fixture.store
        try await store.write {
            try $0.devices.register(Self.registration("d-old", alice, token: "aa01"), at: "2099-01-01T00:00:00.000Z")
            try $0.devices.register(
                DeviceRegistration(
                    deviceID: "d-new", userID: alice.userID, sessionID: alice.sessionID, channel: "fcm",
                    platform: "android", token: "fcm-1", environment: "", locale: "zh-Hant-TW"),
                at: "2099-06-01T00:00:00.000Z")
            try $0.devices.register(
                DeviceRegistration(
                    deviceID: "d-new", userID: alice.userID, sessionID: alice.sessionID, channel: "huawei",
                    platform: "android", token: "hw-1", environment: ""),
                at: "2099-06-01T00:00:00.000Z")
            try $0.devices.noteOutcome(
                token: "fcm-1", channel: "fcm", of: alice.userID, failure: nil, at: "2099-06-02T00:00:00.000Z")
            try $0.devices.noteOutcome(
                token: "fcm-1", channel: "fcm", of: alice.userID, failure: "UNAVAILABLE", at: "2099-06-03T00:00:00.000Z"
            )
        }
        #expect(try await store.snapshot { try $0.devices.devices(of: alice.userID) }.last?.locale == "zh-Hant-TW")
        #expect(
            try await store.snapshot { try $0.devices.locale(ofDevice: "d-new", of: alice.userID) } == "zh-Hant-TW")
        let removed = try await store.write {
            try $0.devices.removeStale(registeredBefore: "2099-03-01T00:00:00.000Z")
        }
        #expect(removed == 1)
        let health = try await store.snapshot { try $0.devices.health(of: alice.userID) }
        #expect(health.map(\.channel) == ["fcm", "huawei"] && health.allSatisfy(\.bound))
        #expect(
            health.first?.lastSuccessAt == "2099-06-02T00:00:00.000Z"
                && health.first?.lastFailureAt == "2099-06-03T00:00:00.000Z"
                && health.first?.lastFailureReason == "UNAVAILABLE")
        #expect(health.last?.lastSuccessAt == nil && health.last?.locale == "zh-Hant-TW")
    }
}
