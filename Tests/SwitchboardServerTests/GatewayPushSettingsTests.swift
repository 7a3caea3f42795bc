import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer

/// A gateway app's own push credentials (SPEC §8, issue 19 deliverable 1): set, read and dropped
/// with the admin key, checked by the server's configuration rules, stored sealed.
@Suite("The push gateway: an app's own push credentials", .serialized, .timeLimit(.minutes(2)))
struct GatewayPushSettingsTests {
    private static let key = Data(SecureRandom.bytes(32)).base64EncodedString()

    private static func put(_ env: GatewaySignalTests.World, _ body: String, app: String = "acme") async -> HTTPResponse {
        await env.world.app.request("PUT", "/admin/gateway/apps/\(app)/push", headers: GatewayTests.admin, body: body)
    }

    private static func error(_ response: HTTPResponse) -> (code: String?, field: String?) {
        let error = response.json?["error"] as? [String: Any]
        return (error?["code"] as? String, error?["field"] as? String)
    }

    @Test func settingsAreCheckedByTheServersRules() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: Self.key)
        defer { env.world.close() }
        for (settings, field) in [
            (#"{"adminKey":"0123456789abcdefgh"}"#, "settings.adminKey"),
            (#"{"apnsBundleID":"com.acme.phone.voip"}"#, "settings.apnsBundleID"),
            (#"{"apnsConnections":"4"}"#, "settings.apnsConnections"),
            (#"{"apnsConnections":true}"#, "settings.apnsConnections"),
            (#"{"xiaomiAppSecret":"s3cret"}"#, "settings"),
            (#"{"apnsKeyFile":"/nonexistent/AuthKey.p8","apnsTeamID":"TEAM123456","apnsKeyID":"KEY1234567"}"#, "settings"),
            (#"{}"#, "settings"),
        ] {
            let response = await Self.put(env, #"{"settings":\#(settings)}"#)
            #expect(response.status == 400 && Self.error(response).field == field, "\(settings): \(response.text)")
        }
        #expect(await Self.put(env, #"{"settings":{"apnsBundleID":"com.acme.phone"}}"#, app: "nope").status == 404)
        #expect(await env.world.app.request("PUT", "/admin/gateway/apps/acme/push", body: #"{"settings":{}}"#).status == 401)
    }

    @Test func theAppsCredentialsAreStoredSealedShownByNameAndDropped() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: Self.key)
        defer { env.world.close() }
        let set = await Self.put(env, #"{"settings":{"xiaomiAppSecret":"acme-mi-secret-value","xiaomiPackageName":"com.acme.phone","apnsBundleID":"com.acme.phone"}}"#)
        #expect(set.status == 200, "\(set.text)")
        #expect(set.json?["settings"] as? [String] == ["apnsBundleID", "xiaomiAppSecret", "xiaomiPackageName"])
        let channels = set.json?["channels"] as? [String: String]
        #expect(channels?["ios-voip"] == "app" && channels?["ios-alert"] == "app" && channels?["xiaomi"] == "app" && channels?["fcm"] == "server")
        #expect(!set.text.contains("acme-mi-secret-value"), "a secret is never shown")
        let stored: String? = try await env.world.app.application.store.read { connection in
            try connection.query("SELECT push_settings FROM gateway_apps WHERE id = 'acme'", []).first?.optionalString("push_settings")
        }
        #expect(stored != nil && stored?.contains("acme-mi-secret-value") == false && stored?.contains("xiaomi") == false, "sealed")
        let shown = await env.world.app.request("GET", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin)
        #expect(shown.status == 200 && shown.json?["settings"] as? [String] == ["apnsBundleID", "xiaomiAppSecret", "xiaomiPackageName"])
        // The app's channels: its own where it brought settings, the server's (the same objects) elsewhere.
        let directory = try #require(env.world.app.application.dispatcher.directory as? GatewayChannelDirectory)
        let own = await directory.channels(forApp: "acme")
        #expect((own["ios-voip"] as? APNsVoIPChannel)?.bundleID == "com.acme.phone")
        #expect(own["xiaomi"]?.summary.auth.contains("com.acme.phone") == true)
        #expect((own["fcm"] as? FCMChannel).map { _ in true } == true)
        #expect(await directory.channels(forCall: "call-1")["ios-voip"].map { ($0 as? APNsVoIPChannel)?.bundleID } == "com.example.switchboard")
        #expect(await env.world.app.request("DELETE", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin).status == 204)
        let cleared = await env.world.app.request("GET", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin)
        #expect(cleared.json?["settings"] as? [String] == [] && (cleared.json?["channels"] as? [String: String])?["ios-voip"] == "server")
        #expect((await directory.channels(forApp: "acme")["ios-voip"] as? APNsVoIPChannel)?.bundleID == "com.example.switchboard")
    }

    @Test func aGatewayRingGoesOutOnTheAppsOwnTopic() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: Self.key)
        defer { env.world.close() }
        #expect(await Self.put(env, #"{"settings":{"apnsBundleID":"com.acme.phone"}}"#).status == 200)
        try await env.device("bob", GatewaySignalTests.iphone, platform: "ios", tokens: #"{"ios-voip":{"token":"\#(GatewaySignalTests.voip)","environment":"production"}}"#)
        _ = try await env.signal("call-own", to: ["bob"])
        #expect(try await eventuallyTrying {
            ((try await env.status("call-own")["devices"] as? [[String: Any]]) ?? []).first?["state"] as? String == "failed"
        })
        // The app's own APNs channel has no key (the server's credentials are not the app's):
        // the ring failed visibly, and never went out through the server's transport.
        let devices = (try await env.status("call-own")["devices"] as? [[String: Any]]) ?? []
        #expect(devices.first?["reason"] as? String == PushChannelSummary.notConfiguredReason, "\(devices)")
        #expect(env.apns.sent.isEmpty, "not sent with the server's credentials")
    }

    @Test func withoutADataEncryptionKeyCredentialsAreRefused() async throws {
        let env = try await GatewaySignalTests.World()
        defer { env.world.close() }
        let response = await Self.put(env, #"{"settings":{"apnsBundleID":"com.acme.phone"}}"#)
        #expect(response.status == 409 && Self.error(response).code == "DATA_ENCRYPTION_DISABLED")
    }
}
