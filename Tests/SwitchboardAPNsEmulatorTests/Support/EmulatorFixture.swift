import Foundation
import SwitchboardAPNsEmulator
import SwitchboardCrypto
import SwitchboardTesting

/// Shared values for the tests: a fixed clock, a signing key, tokens and well-formed pushes.
enum Fixture {
    static let teamID = "DEF123GHIJ"
    static let keyID = "ABC123DEFG"
    static let bundleID = "com.example.app"
    static let topic = "com.example.app.voip"
    /// The emulator's fixed wall clock: 2023-11-14T22:13:20Z.
    static let nowMilliseconds: Int64 = 1_700_000_000_000
    static var nowSeconds: Int64 { nowMilliseconds / 1000 }

    /// The key the emulator trusts; generated once per test process.
    static let key: ES256PrivateKey = try! ES256PrivateKey.generate()

    /// A device token: 64 hex digits made from `seed`.
    static func deviceToken(_ seed: Int) -> String {
        let hex = String(seed, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// A provider token signed by `key`, issued `age` seconds before the fixed clock.
    static func providerToken(
        age: Int64 = 10, key: ES256PrivateKey = Fixture.key, teamID: String = teamID, keyID: String = keyID
    ) -> String {
        try! JWT.apnsProviderToken(teamID: teamID, keyID: keyID, issuedAt: nowSeconds - age, key: key)
    }

    /// The headers of a valid VoIP push.
    static func pushHeaders(token: String = providerToken(), apnsID: String? = nil) -> [(String, String)] {
        var headers = [
            ("authorization", "bearer \(token)"), ("apns-topic", topic), ("apns-push-type", "voip"),
            ("apns-priority", "10"), ("apns-expiration", "0"), ("apns-collapse-id", "call_42"),
        ]
        if let apnsID { headers.append(("apns-id", apnsID)) }
        return headers
    }

    static func payload(_ callID: String = "42") -> [UInt8] {
        Array(#"{"aps":{},"callId":"\#(callID)","scopeKind":"conversation"}"#.utf8)
    }

    /// A valid push request for `deviceToken`.
    static func push(
        to deviceToken: String, callID: String = "42", apnsID: String? = nil, headers: [(String, String)]? = nil
    ) -> TestRequest {
        TestRequest(
            "POST", "/3/device/\(deviceToken)", headers: headers ?? pushHeaders(apnsID: apnsID), body: payload(callID))
    }

    static func configuration(faults: [APNsFault] = []) -> APNsEmulatorConfiguration {
        var configuration = APNsEmulatorConfiguration(port: 0)
        configuration.bundleID = bundleID
        configuration.teamID = teamID
        configuration.keyID = keyID
        configuration.publicKey = key.publicKey
        configuration.clock = APNsEmulatorClock { nowMilliseconds }
        configuration.faults = faults
        return configuration
    }
}

/// Starts an emulator on a free loopback port, runs `body` with it, and always shuts it down.
func withEmulator<T>(
    _ configuration: APNsEmulatorConfiguration = Fixture.configuration(),
    _ body: (APNsEmulator, Int) async throws -> T
) async throws -> T {
    let emulator = APNsEmulator(configuration: configuration)
    let address = try emulator.start()
    do {
        let result = try await body(emulator, address.port)
        await emulator.shutdown()
        return result
    } catch {
        await emulator.shutdown()
        throw error
    }
}
