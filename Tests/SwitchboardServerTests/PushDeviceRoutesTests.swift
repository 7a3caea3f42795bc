import Foundation
import Testing
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardPush
import SwitchboardPushCore
@testable import SwitchboardServer

private let voipToken = String(repeating: "ab", count: 32)
private let alertToken = String(repeating: "cd", count: 32)
private let fcmToken = "dGVzdC1mY20tdG9rZW4:APA91bH-example_token.value"

/// `POST /push/devices`: every token an installation has, checked per channel, and where rings
/// then go (SPEC §7).
@Suite("Push devices: tokens per channel, and routing", .serialized, .timeLimit(.minutes(3)))
struct PushDeviceRoutesTests {
    private static func world(adminKey: String = "") throws -> CallWorld {
        var configuration = ServerConfiguration()
        configuration.push.apns.bundleID = "com.example.phone"
        configuration.adminKey = adminKey
        return try CallWorld(configuration: configuration, apnsTransport: ScriptedPushProvider())
    }

    private static func body(
        _ device: String = UUID().uuidString, platform: String, brand: String? = nil, tokens: [String: [String: String]]
    ) -> String {
        var object: [String: Any] = ["deviceId": device, "platform": platform, "tokens": tokens]
        if let brand { object["brand"] = brand }
        return String(
            decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(arguments: [
        (body(platform: "windows", tokens: ["fcm": ["token": fcmToken]]), "platform"),
        (body(platform: "ios", tokens: [:]), "tokens"),
        (body(platform: "ios", tokens: ["sms": ["token": "x"]]), "tokens.sms"),
        (body(platform: "ios", tokens: ["fcm": ["token": fcmToken]]), "tokens.fcm"),
        (
            body(platform: "android", tokens: ["ios-voip": ["token": voipToken, "environment": "sandbox"]]),
            "tokens.ios-voip"
        ),
        (body(platform: "ios", tokens: ["ios-voip": ["token": voipToken]]), "tokens.ios-voip.environment"),
        (
            body(platform: "ios", tokens: ["ios-alert": ["token": "nothex", "environment": "sandbox"]]),
            "tokens.ios-alert.token"
        ),
        (
            body(platform: "android", tokens: ["fcm": ["token": fcmToken, "environment": "production"]]),
            "tokens.fcm.environment"
        ),
        (body(platform: "android", tokens: ["fcm": ["token": "has space"]]), "tokens.fcm.token"),
        (body(platform: "android", tokens: ["fcm": ["token": ""]]), "tokens.fcm.token"),
        (
            body(
                platform: "ios", brand: "apple", tokens: ["ios-voip": ["token": voipToken, "environment": "sandbox"]]),
            "brand"
        ),
        (body(platform: "android", brand: "Huawei Inc.", tokens: ["fcm": ["token": fcmToken]]), "brand"),
        (body("not-a-uuid", platform: "android", tokens: ["fcm": ["token": fcmToken]]), "deviceId"),
    ])
    func badRegistrationsAre400NamingTheField(body: String, field: String) async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice")
        let response = await world.app.request("POST", "/push/devices", headers: alice.headers, body: body)
        #expect(response.status == 400)
        #expect((response.json?["error"] as? [String: Any])?["code"] as? String == "VALIDATION_FAILED")
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == field)
    }

    @Test func aDeviceRegistersItsTokensAndListingThemAgainReplacesTheSet() async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice")
        let device = UUID().uuidString
        let first = await world.app.request(
            "POST", "/push/devices", headers: alice.headers,
            body: Self.body(
                device, platform: "android", brand: "HUAWEI",
                tokens: ["fcm": ["token": fcmToken], "huawei": ["token": "HW0123456789"]]))
        #expect(first.status == 200)
        #expect(first.json?["brand"] as? String == "huawei" && first.json?["platform"] as? String == "android")
        let tokens = try #require(first.json?["tokens"] as? [[String: Any]])
        #expect(tokens.map { $0["channel"] as? String } == ["fcm", "huawei"])
        #expect(
            tokens.first?["tokenSuffix"] as? String == String(fcmToken.suffix(8)) && tokens.first?["environment"] == nil
        )
        #expect(!first.text.contains(fcmToken), "a token is never echoed whole")
        let channels = {
            try await world.app.application.store.read {
                try $0.query("SELECT channel FROM push_devices ORDER BY channel", []).map { try $0.string("channel") }
            }
        }
        #expect(try await channels() == ["fcm", "huawei"])
        // The same device says it has only its FCM token now.
        let again = await world.app.request(
            "POST", "/push/devices", headers: alice.headers,
            body: Self.body(
                device, platform: "android", tokens: ["fcm": ["token": fcmToken]]))
        #expect(again.status == 200)
        #expect(try await channels() == ["fcm"])
        // /voip/devices adds an iPhone's VoIP token and leaves the device's other tokens alone.
        let phone = UUID().uuidString
        _ = await world.app.request(
            "POST", "/push/devices", headers: alice.headers,
            body: Self.body(
                phone, platform: "ios", tokens: ["ios-alert": ["token": alertToken, "environment": "production"]]))
        let voip = await world.app.request(
            "POST", "/voip/devices", headers: alice.headers,
            body: #"{"deviceId":"\#(phone)","pushToken":"\#(voipToken)","environment":"production"}"#)
        #expect(voip.status == 200)
        #expect(try await channels() == ["fcm", "ios-alert", "ios-voip"])
        // PushKit dropped the VoIP token: only that one goes; /push/devices removes the whole installation.
        #expect(await world.app.request("DELETE", "/voip/devices/\(phone)", headers: alice.headers).status == 204)
        #expect(try await channels() == ["fcm", "ios-alert"])
        #expect(await world.app.request("DELETE", "/voip/devices/\(phone)", headers: alice.headers).status == 404)
        #expect(await world.app.request("DELETE", "/push/devices/\(device)", headers: alice.headers).status == 204)
        #expect(await world.app.request("DELETE", "/push/devices/\(phone)", headers: alice.headers).status == 204)
        #expect(await world.app.request("DELETE", "/push/devices/\(device)", headers: alice.headers).status == 404)
        #expect(try await channels().isEmpty)
    }

    /// A device names its language (BCP 47) with its tokens: kept as sent, answered back, kept
    /// by a registration that does not name one, and carried (as the catalogue's language) in
    /// the data of its rings. A tag that is not one is refused, naming the field.
    @Test func aDeviceRegistersItsLanguage() async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let device = UUID().uuidString
        func register(_ locale: Any?) async -> HTTPResponse {
            var object: [String: Any] = [
                "deviceId": device, "platform": "android", "tokens": ["fcm": ["token": fcmToken]],
            ]
            if let locale { object["locale"] = locale }
            let body = String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            return await world.app.request("POST", "/push/devices", headers: bob.headers, body: body)
        }
        for bad in [
            "", "z", "zh--TW", "zh-Hant-TW-", "日本語", String(repeating: "a", count: 9),
            "en-" + String(repeating: "a", count: 33),
        ] {
            let refused = await register(bad)
            #expect(refused.status == 400, "\(bad)")
            #expect((refused.json?["error"] as? [String: Any])?["field"] as? String == "locale", "\(bad)")
        }
        #expect(await register(42).status == 400)
        let first = await register("zh-Hant-TW")
        #expect(first.status == 200 && first.json?["locale"] as? String == "zh-Hant-TW")
        let again = await register(nil)
        #expect(again.status == 200 && again.json?["locale"] as? String == "zh-Hant-TW", "kept")
        #expect(await register("de_CH").json?["locale"] as? String == "de_CH")
        #expect(await register("zh-Hant-TW").status == 200)

        let conversation = try await world.befriend(alice, bob)
        _ = try #require(await world.call(alice, "conversation", conversation).call)
        let payload = try await world.app.application.store.read {
            try $0.query("SELECT payload FROM push_jobs WHERE channel = 'fcm'", []).first.map {
                try $0.string("payload")
            }
        }
        #expect(
            VendorNotification.fields(of: Array((payload ?? "").utf8))?["locale"] == "zh-Hant",
            "the ring's data names the catalogue's language: \(payload ?? "none")")
    }

    /// An iPhone is rung through its VoIP token only (never its alert token); an Android phone
    /// through FCM when this server has no channel for its maker; a ring on a channel that is
    /// not configured, or that this server does not have, fails at once, visibly.
    @Test func ringsGoOutOnTheRoutedChannelAndAMissingChannelFailsVisibly() async throws {
        let world = try Self.world(adminKey: "admin-key-0123456789")
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        _ = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: Self.body(
                platform: "ios",
                tokens: [
                    "ios-voip": ["token": voipToken, "environment": "production"],
                    "ios-alert": ["token": alertToken, "environment": "production"],
                ]))
        _ = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: Self.body(
                platform: "android", brand: "xiaomi",
                tokens: ["fcm": ["token": fcmToken], "xiaomi": ["token": "MI-regid-01"]]))
        _ = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: Self.body(
                platform: "android", brand: "oppo", tokens: ["oppo": ["token": "OPPO-regid-01"]]))
        _ = try #require(await world.call(alice, "conversation", conversation, mode: "audio").call)
        let jobs = {
            try await world.app.application.store.read { connection in
                try connection.query(
                    "SELECT channel, provider, token, state, reason FROM push_jobs ORDER BY channel", []
                ).map {
                    [
                        try $0.string("channel"), try $0.string("provider"), try $0.string("token"),
                        try $0.string("state"), try $0.optionalString("reason") ?? "",
                    ]
                }
            }
        }
        #expect(try await eventuallyTrying { try await jobs().allSatisfy { $0[3] != "pending" } })
        let written = try await jobs()
        #expect(written.count == 3, "one ring per device")
        #expect(
            written[0] == ["fcm", "fcm", fcmToken, "failed", PushChannelSummary.notConfiguredReason],
            "FCM is not configured here")
        #expect(written[1] == ["ios-voip", "apns", voipToken, "delivered", ""])
        #expect(
            written[2] == ["oppo", "oppo", "OPPO-regid-01", "failed", PushChannelSummary.notConfiguredReason],
            "OPPO is not configured here")
        let status = await world.app.request(
            "GET", "/admin/push/status", headers: ["Authorization": "Bearer admin-key-0123456789"])
        let outcomes = try #require(status.json?["outcomes"] as? [[String: Any]])
        #expect(
            outcomes.contains {
                $0["channel"] as? String == "fcm" && $0["provider"] as? String == "fcm"
                    && $0["reason"] as? String == "ProviderNotConfigured"
            })
        #expect(
            outcomes.contains {
                $0["channel"] as? String == "oppo" && $0["reason"] as? String == "ProviderNotConfigured"
            })
        #expect(outcomes.contains { $0["channel"] as? String == "ios-voip" && $0["state"] as? String == "delivered" })
    }

    @Test func routingPicksTheMakersChannelWhenConfiguredThenFCM() {
        let android: Set<String> = ["fcm", "huawei"]
        #expect(
            PushRouting.ringChannel(platform: "android", tokens: android, configured: ["fcm", "huawei"]) == "huawei")
        #expect(PushRouting.ringChannel(platform: "android", tokens: android, configured: ["fcm"]) == "fcm")
        #expect(
            PushRouting.ringChannel(platform: "android", tokens: android, configured: []) == "fcm",
            "FCM first when nothing is configured")
        #expect(
            PushRouting.ringChannel(platform: "android", tokens: ["vivo"], configured: []) == "vivo",
            "the only token, so its failure is recorded")
        #expect(PushRouting.ringChannel(platform: "android", tokens: ["oppo", "vivo"], configured: ["vivo"]) == "vivo")
        // Of several makers' tokens (a phone that once ran another maker's push SDK), its own brand's first.
        #expect(
            PushRouting.ringChannel(
                platform: "android", tokens: ["fcm", "huawei", "xiaomi"], configured: ["huawei", "xiaomi"]) == "huawei")
        #expect(
            PushRouting.ringChannel(
                platform: "android", brand: "redmi", tokens: ["fcm", "huawei", "xiaomi"],
                configured: ["huawei", "xiaomi"]) == "xiaomi")
        #expect(
            PushRouting.ringChannel(platform: "android", brand: "oneplus", tokens: ["fcm", "oppo"], configured: [])
                == "fcm")
        #expect(
            PushRouting.noticeChannel(
                platform: "android", brand: "iqoo", tokens: ["vivo", "oppo"], configured: ["vivo", "oppo"]) == "vivo")
        #expect(PushRouting.makerChannel(brand: "google") == nil && PushRouting.makerChannel(brand: "realme") == "oppo")
        #expect(PushRouting.ringChannel(platform: "android", tokens: [], configured: ["fcm"]) == nil)
        #expect(
            PushRouting.ringChannel(platform: "ios", tokens: ["ios-voip", "ios-alert"], configured: []) == "ios-voip")
        #expect(
            PushRouting.ringChannel(platform: "ios", tokens: ["ios-alert"], configured: ["ios-alert"]) == nil,
            "an alert cannot ring")
        #expect(PushRouting.ringChannel(platform: "web", tokens: ["fcm"], configured: ["fcm"]) == nil)
        #expect(PushRouting.provider(of: "ios-alert") == "apns" && PushRouting.provider(of: "huawei") == "huawei")
        // Notices: an iPhone's alert token only, never its VoIP token; an Android phone's ring channel.
        #expect(
            PushRouting.noticeChannel(platform: "ios", tokens: ["ios-voip", "ios-alert"], configured: []) == "ios-alert"
        )
        #expect(PushRouting.noticeChannel(platform: "ios", tokens: ["ios-voip"], configured: ["ios-voip"]) == nil)
        #expect(
            PushRouting.noticeChannel(platform: "android", tokens: ["fcm", "huawei"], configured: ["huawei"])
                == "huawei")
        #expect(PushRouting.noticeChannel(platform: "android", tokens: ["fcm"], configured: []) == "fcm")
    }
}
