import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardPushCore

/// Call signals through the gateway: every callee device rung through the outbox on its channel,
/// a cancel dropping what is pending and telling the Android phones, and the two limits.
@Suite("The push gateway: devices, signals, cancels and limits", .serialized, .timeLimit(.minutes(3)))
struct GatewaySignalTests {
    struct World {
        let world: CallWorld
        let apns = ScriptedPushProvider(), fcm = ScriptedPushProvider(), xiaomi = ScriptedPushProvider()
        let key = try! Ed25519PrivateKey.generate()
        let counter = Counter()

        final class Counter: @unchecked Sendable {
            private var value = 0
            private let lock = NSLock()
            func next() -> Int {
                lock.lock()
                defer { lock.unlock() }
                value += 1
                return value
            }
        }

        init(dataEncryptionKey: String = "") async throws {
            var configuration = ServerConfiguration()
            configuration.adminKey = GatewayTests.adminKey
            configuration.dataEncryptionKey = dataEncryptionKey
            // The gateway's limits as they ship.
            world = try CallWorld(
                configuration: configuration, apnsTransport: apns, fcmTransport: fcm,
                vendorTransports: ["xiaomi": xiaomi], asShipped: true)
            let registered = await world.app.request(
                "POST", "/admin/gateway/apps", headers: GatewayTests.admin,
                body: """
                    {"id":"acme","name":"Acme","keys":[{"keyId":"k1","publicKey":"\(Base64URL.encode(key.publicKey.rawBytes))"}]}
                    """)
            #expect(registered.status == 201)
        }

        /// A signed request (each one different: a nonce in the query keeps identical bodies apart).
        func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPResponse {
            let target = path + (path.contains("?") ? "&" : "?") + "n=\(counter.next())"
            let stamp = String(Int64(world.clock.now.timeIntervalSince1970))
            let signature = try key.sign(
                GatewaySignature.canonical(
                    app: "acme", key: "k1", method: method, target: target, timestamp: stamp, body: Array(body.utf8)))
            return await world.app.request(
                method, target,
                headers: [
                    "Host": "test", "Content-Type": "application/json", "Switchboard-App": "acme",
                    "Switchboard-Key": "k1",
                    "Switchboard-Timestamp": stamp, "Switchboard-Signature": Base64URL.encode(signature),
                    "Switchboard-Signature-Version": "2",
                ], body: body)
        }

        func device(_ user: String, _ id: String, platform: String, tokens: String, brand: String? = nil) async throws {
            let brandField = brand.map { #","brand":"\#($0)""# } ?? ""
            let answer = try await send(
                "POST", "/gateway/v1/devices",
                #"{"userId":"\#(user)","deviceId":"\#(id)","platform":"\#(platform)"\#(brandField),"tokens":\#(tokens)}"#
            )
            #expect(answer.status == 200, "\(String(decoding: answer.bodyBytes, as: UTF8.self))")
        }

        func signal(_ callID: String, to callees: [String]) async throws -> [String: Any] {
            let list = callees.map { #""\#($0)""# }.joined(separator: ",")
            let answer = try await send(
                "POST", "/gateway/v1/signals",
                #"{"callId":"\#(callID)","roomId":"room-1","type":"video","caller":{"id":"u-caller","name":"Caller"},"callees":[\#(list)],"ext":{"ios":{"collapseId":"x"}},"timestamp":1}"#
            )
            #expect([200, 202].contains(answer.status), "\(String(decoding: answer.bodyBytes, as: UTF8.self))")
            return (try JSONSerialization.jsonObject(with: Data(answer.bodyBytes)) as? [String: Any]) ?? [:]
        }

        func status(_ callID: String) async throws -> [String: Any] {
            (try JSONSerialization.jsonObject(
                with: Data(try await send("GET", "/gateway/v1/signals/\(callID)").bodyBytes)) as? [String: Any]) ?? [:]
        }
    }

    static let iphone = "11111111-1111-4111-8111-111111111111", pixel = "22222222-2222-4222-8222-222222222222"
    static let redmi = "33333333-3333-4333-8333-333333333333"
    static let voip = String(repeating: "ab", count: 32)

    @Test func aSignalRingsEveryCalleeDeviceOnItsChannelAndACancelDropsAndTells() async throws {
        let env = try await World()
        defer { env.world.close() }
        try await env.device(
            "bob", Self.iphone, platform: "ios",
            tokens: #"{"ios-voip":{"token":"\#(Self.voip)","environment":"production"}}"#)
        try await env.device("bob", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-bob"}}"#)
        try await env.device(
            "carol", Self.redmi, platform: "android",
            tokens: #"{"fcm":{"token":"fcm-carol"},"xiaomi":{"token":"mi-carol"}}"#, brand: "redmi")
        env.xiaomi.script("mi-carol", [.response(status: 200, reason: "0"), .response(status: 200, reason: "0")])
        let first = try await env.signal("call-1", to: ["bob", "carol", "nobody"])
        #expect(first["state"] as? String == "ringing")
        let callees = (first["callees"] as? [[String: String]]) ?? []
        #expect(callees.count == 3 && callees.contains(["userId": "nobody", "outcome": "no_devices"]))
        #expect(await eventually { env.apns.sent.count == 1 && env.fcm.sent.count == 1 && env.xiaomi.sent.count == 1 })
        #expect(
            env.apns.sent.first?.token == Self.voip && env.xiaomi.sent.first?.token == "mi-carol"
                && env.fcm.sent.first?.token == "fcm-bob")
        let voipPayload = try #require(
            try JSONSerialization.jsonObject(with: Data(env.apns.sent.first?.payload ?? [])) as? [String: Any])
        #expect(String(describing: voipPayload).contains("call-1"), "the app's own call id in the VoIP payload")
        #expect(
            try await eventuallyTrying {
                ((try await env.status("call-1")["devices"] as? [[String: Any]]) ?? []).filter {
                    $0["state"] as? String == "delivered"
                }.count == 3
            })
        // The same signal again (an app server's retry): its status, nothing rung twice.
        let again = try await env.signal("call-1", to: ["bob", "carol"])
        #expect(
            again["state"] as? String == "ringing" && (again["devices"] as? [[String: Any]])?.count == 3,
            "still the first signal's three jobs")

        // The second signal: bob's Pixel answers 503 and waits for its retry; the cancel drops it.
        env.fcm.script("fcm-bob", [.response(status: 503, reason: "UNAVAILABLE")])
        _ = try await env.signal("call-2", to: ["bob", "carol"])
        #expect(await eventually { env.fcm.sent.count == 2 && env.xiaomi.sent.count == 2 && env.apns.sent.count == 2 })
        let cancelled = try await env.send("POST", "/gateway/v1/signals/call-2/cancel")
        #expect(cancelled.status == 200)
        env.world.clock.advance(seconds: 10)
        #expect(
            try await eventuallyTrying {
                ((try await env.status("call-2")["devices"] as? [[String: Any]]) ?? []).contains {
                    $0["deviceId"] as? String == Self.pixel && $0["state"] as? String == "dropped"
                        && $0["reason"] as? String == "call_not_ringing"
                }
            })
        // Carol's Redmi, rung, is told on Xiaomi (a pass-through call_ended); bob's iPhone (VoIP only) is not.
        #expect(await eventually { env.xiaomi.sent.last?.kind == .notice })
        #expect(env.apns.sent.allSatisfy { $0.kind == .ring })
        #expect(try await env.status("call-2")["state"] as? String == "cancelled")
        #expect(try await env.send("GET", "/gateway/v1/signals/none").status == 404)
    }

    /// An app sets its users' push preferences as an account would: a callee who is off gets
    /// no push (outcome do_not_disturb), one on notify a quiet notice (outcome notified), and
    /// the caller they always ring rings through.
    @Test func theGatewayHonoursItsUsersPushPreferences() async throws {
        let env = try await World()
        defer { env.world.close() }
        try await env.device("bob", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-bob"}}"#)
        try await env.device(
            "carol", Self.redmi, platform: "android", tokens: #"{"xiaomi":{"token":"mi-carol"}}"#, brand: "redmi")
        let fresh = try await env.send("GET", "/gateway/v1/users/bob/push-preferences")
        #expect(fresh.status == 200 && fresh.json?["calls"] as? String == "ring")
        #expect(
            try await env.send("PUT", "/gateway/v1/users/bob/push-preferences", #"{"calls":"off","alwaysRing":[]}"#)
                .status == 200)
        let carols = try await env.send(
            "PUT", "/gateway/v1/users/carol/push-preferences", #"{"calls":"notify","alwaysRing":["VIP-1"]}"#)
        #expect(carols.status == 200 && carols.json?["alwaysRing"] as? [String] == ["VIP-1"], "app ids kept as given")
        let refused = try await env.send(
            "PUT", "/gateway/v1/users/carol/push-preferences", #"{"calls":"loud","alwaysRing":[]}"#)
        #expect(refused.status == 400)
        let unsigned = await env.world.app.request(
            "PUT", "/gateway/v1/users/carol/push-preferences", body: #"{"calls":"off","alwaysRing":[]}"#)
        #expect(unsigned.status == 401)

        let first = try await env.signal("call-q", to: ["bob", "carol"])
        let callees = (first["callees"] as? [[String: String]]) ?? []
        #expect(callees.contains(["userId": "bob", "outcome": "do_not_disturb"]))
        #expect(callees.contains(["userId": "carol", "outcome": "notified"]))
        #expect(await eventually { env.xiaomi.sent.count == 1 })
        #expect(env.fcm.sent.isEmpty, "a quiet notice for carol, and nothing for bob")
        #expect(
            VendorNotification.fields(of: env.xiaomi.sent.first?.payload ?? [])?["type"] == "call_incoming")

        let vip = try await env.send(
            "POST", "/gateway/v1/signals",
            #"{"callId":"call-v","roomId":"room-2","type":"audio","caller":{"id":"VIP-1","name":"Boss"},"callees":["carol"],"timestamp":1}"#
        )
        #expect(vip.status == 202)
        #expect(
            await eventually {
                env.xiaomi.sent.count == 2
                    && VendorNotification.fields(of: env.xiaomi.sent.last?.payload ?? [])?["type"] == "call"
            })
    }

    @Test func extCarriesTheAppsDataToThePhoneAndItsCollapseIDToAPNs() async throws {
        let env = try await World()
        defer { env.world.close() }
        try await env.device(
            "bob", Self.iphone, platform: "ios",
            tokens: #"{"ios-voip":{"token":"\#(Self.voip)","environment":"production"}}"#)
        try await env.device("bob", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-bob"}}"#)
        let body =
            #"{"callId":"call-ext","roomId":"room-9","type":"audio","caller":{"id":"u-caller","name":"Caller"},"callees":["bob"],"ext":{"data":{"thread":"t-42","avatar":"https://a.example/c.png"},"apns":{"collapseId":"acme-t-42"},"other":{"kept":true}},"timestamp":1}"#
        let answer = try await env.send("POST", "/gateway/v1/signals", body)
        #expect(answer.status == 202 || answer.status == 200, "\(String(decoding: answer.bodyBytes, as: UTF8.self))")
        #expect(await eventually { env.apns.sent.count == 1 && env.fcm.sent.count == 1 })
        let voip = try #require(env.apns.sent.first)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(voip.payload)) as? [String: Any])
        #expect(payload["ext"] as? [String: String] == ["thread": "t-42", "avatar": "https://a.example/c.png"])
        #expect(Dictionary(uniqueKeysWithValues: voip.headers)["apns-collapse-id"] == "acme-t-42")
        let fcmPush = try #require(env.fcm.sent.first)
        let data = try #require(try JSONSerialization.jsonObject(with: Data(fcmPush.payload)) as? [String: String])
        let ext = try #require(
            data["ext"].flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] })
        #expect(
            ext == ["thread": "t-42", "avatar": "https://a.example/c.png"],
            "FCM data values are strings: ext is JSON text")
        for (bad, field) in [
            (#""ext":{"data":{"n":1}}"#, "ext.data"), (#""ext":{"data":"x"}"#, "ext.data"),
            (#""ext":{"apns":[]}"#, "ext.apns"),
            (#""ext":{"apns":{"collapseId":""}}"#, "ext.apns.collapseId"),
            (#""ext":{"data":{"big":"\#(String(repeating: "x", count: 2100))"}}"#, "ext.data"),
            (#""ext":{"apns":{"collapseId":"\#(String(repeating: "c", count: 65))"}}"#, "ext.apns.collapseId"),
        ] {
            let refused = try await env.send(
                "POST", "/gateway/v1/signals",
                #"{"callId":"call-bad","roomId":"r","type":"audio","caller":{"id":"c","name":"C"},"callees":["bob"],\#(bad),"timestamp":1}"#
            )
            let error =
                (try? JSONSerialization.jsonObject(with: Data(refused.bodyBytes)) as? [String: Any])?["error"]
                as? [String: Any]
            #expect(refused.status == 400 && error?["field"] as? String == field, "\(bad)")
        }
    }

    @Test func theFourthSignalToACalleeWithinTenMinutesIsDroppedSilently() async throws {
        let env = try await World()
        defer { env.world.close() }
        try await env.device("bob", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-bob"}}"#)
        for index in 1...3 {
            #expect(
                (try await env.signal("call-\(index)", to: ["bob"])["callees"] as? [[String: String]]) == [
                    ["userId": "bob", "outcome": "rung"]
                ])
            #expect(await eventually { env.fcm.sent.count == index }, "sent before the clock moves past its window")
            env.world.clock.advance(seconds: 60)
        }
        let fourth = try await env.signal("call-4", to: ["bob"])
        #expect(
            (fourth["callees"] as? [[String: String]]) == [["userId": "bob", "outcome": "rate_limited"]],
            "accepted, not sent")
        #expect(await eventually { env.fcm.sent.count == 3 })
        // Once the first signal has left the ten minutes (and its 30 s slot), bob may be rung again.
        env.world.clock.advance(seconds: 7 * 60 + 31)
        #expect(
            (try await env.signal("call-5", to: ["bob"])["callees"] as? [[String: String]]) == [
                ["userId": "bob", "outcome": "rung"]
            ])
        #expect(await eventually { env.fcm.sent.count == 4 })
    }

    @Test func theSixthRingToADeviceWithinAMinuteIsRefusedAndCutsItOffForTenMinutes() async throws {
        let env = try await World()
        defer { env.world.close() }
        // The device moves between users (a shared phone): the callee limit never holds it back.
        for index in 1...6 {
            try await env.device(
                "user\(index)", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-shared"}}"#)
            _ = try await env.signal("call-\(index)", to: ["user\(index)"])
            // Sent before the phone moves on (a ring to a user the device left is dropped, unbound).
            if index <= 5 { #expect(await eventually { env.fcm.sent.count == index }, "ring \(index)") }
        }
        let sixth = try await env.status("call-6")
        #expect(
            (sixth["devices"] as? [[String: Any]])?.first?["state"] as? String == "dropped",
            "the 6th ring in a minute: refused")
        #expect((sixth["devices"] as? [[String: Any]])?.first?["reason"] as? String == GatewayService.cutOffReason)
        #expect(env.fcm.sent.count == 5)
        env.world.clock.advance(seconds: 5 * 60)
        try await env.device("user7", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-shared"}}"#)
        _ = try await env.signal("call-7", to: ["user7"])
        #expect(
            ((try await env.status("call-7")["devices"] as? [[String: Any]])?.first?["reason"] as? String)
                == GatewayService.cutOffReason, "still cut off")
        env.world.clock.advance(seconds: 5 * 60 + 1)
        try await env.device("user9", Self.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-shared"}}"#)
        _ = try await env.signal("call-9", to: ["user9"])
        #expect(await eventually { env.fcm.sent.count == 6 }, "the breaker's ten minutes are over")
        // Devices are the app's own: unregistering one the app does not have is 404.
        #expect(try await env.send("DELETE", "/gateway/v1/users/user9/devices/\(Self.pixel)").status == 204)
        #expect(try await env.send("DELETE", "/gateway/v1/users/user9/devices/\(Self.pixel)").status == 404)
    }
}
