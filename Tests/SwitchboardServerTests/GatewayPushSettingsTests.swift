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

    private static func put(_ env: GatewaySignalTests.World, _ body: String, app: String = "acme") async -> HTTPResponse
    {
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
            (
                #"{"apnsKeyFile":"/nonexistent/AuthKey.p8","apnsTeamID":"TEAM123456","apnsKeyID":"KEY1234567"}"#,
                "settings"
            ),
            (#"{}"#, "settings"),
            // A family must be the app's own, whole: nothing of the server's is borrowed.
            (#"{"apnsBundleID":"com.acme.phone"}"#, "settings"),
            (#"{"apnsProductionURL":"https://push.example"}"#, "settings"),
            (#"{"fcmURL":"https://fcm.example"}"#, "settings"),
            (#"{"huaweiAppID":"12345"}"#, "settings"),
        ] {
            let response = await Self.put(env, #"{"settings":\#(settings)}"#)
            #expect(response.status == 400 && Self.error(response).field == field, "\(settings): \(response.text)")
        }
        #expect(
            await Self.put(
                env, #"{"settings":{"xiaomiAppSecret":"s","xiaomiPackageName":"com.acme.phone"}}"#, app: "nope"
            ).status == 404)
        #expect(
            await env.world.app.request("PUT", "/admin/gateway/apps/acme/push", body: #"{"settings":{}}"#).status == 401
        )
    }

    /// The app's own APNs key, team and bundle id, aimed at `url`.
    private static func apnsSettings(
        _ directory: ScratchDirectory, url: String = "https://127.0.0.1:1"
    ) throws -> String {
        let keyFile = directory.path + "/acme.p8"
        try ES256PrivateKey.generate().pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        return
            #""apnsBundleID":"com.acme.phone","apnsTeamID":"ACMETEAM01","apnsKeyID":"ACMEKEY001","apnsKeyFile":"\#(keyFile)","apnsProductionURL":"\#(url)","apnsSandboxURL":"\#(url)""#
    }

    @Test func theAppsCredentialsAreStoredSealedShownByNameAndDropped() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: Self.key)
        defer { env.world.close() }
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let set = await Self.put(
            env,
            #"{"settings":{"xiaomiAppSecret":"acme-mi-secret-value","xiaomiPackageName":"com.acme.phone",\#(try Self.apnsSettings(directory))}}"#
        )
        #expect(set.status == 200, "\(set.text)")
        let names = [
            "apnsBundleID", "apnsKeyFile", "apnsKeyID", "apnsProductionURL", "apnsSandboxURL", "apnsTeamID",
            "xiaomiAppSecret", "xiaomiPackageName",
        ]
        #expect(set.json?["settings"] as? [String] == names)
        let whose = set.json?["channels"] as? [String: String]
        #expect(
            whose?["ios-voip"] == "app" && whose?["ios-alert"] == "app" && whose?["xiaomi"] == "app"
                && whose?["fcm"] == "server")
        #expect(!set.text.contains("acme-mi-secret-value"), "a secret is never shown")
        let stored: String? = try await env.world.app.application.store.read { connection in
            try connection.query("SELECT push_settings FROM gateway_apps WHERE id = 'acme'", []).first?.optionalString(
                "push_settings")
        }
        #expect(
            stored != nil && stored?.contains("acme-mi-secret-value") == false && stored?.contains("xiaomi") == false,
            "sealed")
        let shown = await env.world.app.request("GET", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin)
        #expect(shown.status == 200 && shown.json?["settings"] as? [String] == names)
        // The app's channels: its own where it brought settings, the server's (the same objects) elsewhere.
        let channels = try #require(env.world.app.application.dispatcher.directory as? GatewayChannelDirectory)
        let own = try await channels.channels(forApp: "acme")
        #expect((own["ios-voip"] as? APNsVoIPChannel)?.bundleID == "com.acme.phone")
        #expect(own["xiaomi"]?.summary.auth.contains("com.acme.phone") == true)
        #expect((own["fcm"] as? FCMChannel).map { _ in true } == true)
        let servers = try await channels.channels(forCall: "call-1")
        #expect((servers["ios-voip"] as? APNsVoIPChannel)?.bundleID == "com.example.switchboard")
        #expect(
            await env.world.app.request("DELETE", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin).status
                == 204)
        let cleared = await env.world.app.request("GET", "/admin/gateway/apps/acme/push", headers: GatewayTests.admin)
        #expect(
            cleared.json?["settings"] as? [String] == []
                && (cleared.json?["channels"] as? [String: String])?["ios-voip"] == "server")
        #expect(
            (try await channels.channels(forApp: "acme")["ios-voip"] as? APNsVoIPChannel)?.bundleID
                == "com.example.switchboard")
    }

    @Test func aGatewayRingIsBuiltOnTheAppsOwnTopicAndNeverSentThroughTheServers() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: Self.key)
        defer { env.world.close() }
        let directory = ScratchDirectory()
        defer { directory.remove() }
        #expect(await Self.put(env, #"{"settings":{\#(try Self.apnsSettings(directory))}}"#).status == 200)
        try await env.device(
            "bob", GatewaySignalTests.iphone, platform: "ios",
            tokens: #"{"ios-voip":{"token":"\#(GatewaySignalTests.voip)","environment":"production"}}"#)
        _ = try await env.signal("call-own", to: ["bob"])
        let topic: String? = try await env.world.app.application.store.read { connection in
            try connection.query("SELECT headers FROM push_jobs", []).first?.string("headers")
        }
        #expect(topic?.contains("com.acme.phone.voip") == true, "\(topic ?? "no job")")
        // Its own APNs service (here unreachable) is tried, never the server's transport.
        #expect(
            try await eventuallyTrying {
                try await env.world.app.application.store.read { connection in
                    try connection.query("SELECT attempts FROM push_jobs", []).first?.int("attempts") ?? 0
                } >= 1
            })
        #expect(env.apns.sent.isEmpty, "not sent with the server's credentials")
    }

    @Test func withoutADataEncryptionKeyCredentialsAreRefused() async throws {
        let env = try await GatewaySignalTests.World()
        defer { env.world.close() }
        let response = await Self.put(
            env, #"{"settings":{"xiaomiAppSecret":"s","xiaomiPackageName":"com.acme.phone"}}"#)
        #expect(response.status == 409 && Self.error(response).code == "DATA_ENCRYPTION_DISABLED")
    }
}
