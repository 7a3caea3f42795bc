import Foundation
import Testing
import SwitchboardTesting
import SwitchboardCrypto
@testable import SwitchboardCore
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardPushCore

private let fcmToken = "cFCM-token:APA91bH_example-1"

/// Android rings through the `fcm` channel, end to end inside the server: routing, the data
/// message handed to the transport, and the FCM reason table acting on the outbox.
@Suite("Push over FCM: rings, token hygiene, Retry-After", .serialized, .timeLimit(.minutes(3)))
struct PushFCMTests {
    private struct World {
        let world: CallWorld
        let fcm: ScriptedPushProvider
        var app: TestApplication { world.app }

        init() throws {
            let fcm = ScriptedPushProvider()
            self.fcm = fcm
            world = try CallWorld(apnsTransport: ScriptedPushProvider(), fcmTransport: fcm)
        }

        func registerAndroid(_ person: CallWorld.Person) async -> HTTPResponse {
            await app.request(
                "POST", "/push/devices", headers: person.headers,
                body:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"google","tokens":{"fcm":{"token":"\#(fcmToken)"}}}"#
            )
        }

        func job() async throws -> (state: String, reason: String?, attempts: Int, next: Int64)? {
            try await app.application.store.read { connection in
                try connection.query(
                    "SELECT state, reason, attempts, next_attempt_at_ms FROM push_jobs WHERE channel = 'fcm'", []
                ).first.map {
                    (
                        try $0.string("state"), try $0.optionalString("reason"), try $0.int("attempts"),
                        try $0.int64("next_attempt_at_ms")
                    )
                }
            }
        }

        func tokens() async throws -> Int {
            try await app.application.store.read {
                try $0.query("SELECT count(*) AS n FROM push_devices WHERE channel = 'fcm'", []).first?.int("n") ?? -1
            }
        }
    }

    @Test func anAndroidPhoneIsRungWithAHighPriorityDataMessage() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        #expect(await env.registerAndroid(bob).status == 200)
        let call = try #require(await env.world.call(alice, "conversation", conversation, mode: "video").call)
        #expect(try await eventuallyTrying { try await env.job()?.state == "delivered" })
        let sent = try #require(env.fcm.sent.first)
        #expect(env.fcm.sent.count == 1 && sent.channel == "fcm" && sent.token == fcmToken && sent.callID == call.id)
        let data = try #require(
            try JSONSerialization.jsonObject(with: Data(sent.payload)) as? [String: String], "every value a string")
        #expect(
            data["type"] == "call" && data["callId"] == call.id && data["mode"] == "video"
                && data["callerName"] == "alice")
        #expect(sent.expiresAt.timeIntervalSince(env.world.clock.now) <= 45, "no longer than the ring window")
    }

    @Test func unregisteredDeletesTheTokenAndUnavailableWaitsItsRetryAfter() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.registerAndroid(bob)
        env.fcm.script(fcmToken, [.response(status: 503, reason: "UNAVAILABLE", retryAfter: 6)])
        let start = CallStore.milliseconds(env.world.clock.now)
        let call = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.job()?.attempts == 1 })
        let retry = try #require(try await env.job())
        #expect(retry.state == "pending" && retry.reason == "UNAVAILABLE")
        #expect(retry.next >= start + 6000, "Retry-After (6 s) wins over the 1.25 s backoff")
        // The next answer: the token is gone.
        env.fcm.script(fcmToken, [.response(status: 404, reason: "UNREGISTERED")])
        env.world.clock.advance(seconds: 6.5)
        #expect(try await eventuallyTrying { try await env.job()?.state == "failed" })
        #expect(try await env.job()?.reason == "UNREGISTERED")
        #expect(try await env.tokens() == 0)
        _ = call
    }

    @Test func aServiceAccountFileThatCannotWorkIsRefusedAtStartWithWhatIsWrong() throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        func problem(_ contents: String?) -> String {
            var configuration = ServerConfiguration()
            configuration.push.fcm.serviceAccountFile = directory.path + "/account.json"
            if let contents {
                try? contents.write(
                    toFile: configuration.push.fcm.serviceAccountFile, atomically: true, encoding: .utf8)
            }
            do {
                _ = try PushChannelConfiguration.fcmChannel(from: configuration)
                return "accepted"
            } catch {
                return String(describing: error)
            }
        }
        #expect(problem(nil).contains("cannot read fcmServiceAccountFile"))
        #expect(problem("{").contains("not a JSON object"))
        #expect(problem(#"{"type":"service_account","client_email":"a@b"}"#).contains("'project_id'"))
        #expect(
            problem(#"{"type":"authorized_user","project_id":"p","client_email":"a@b"}"#).contains(
                "not 'service_account'"))
        let ecKey = try ES256PrivateKey.generate().pkcs8PEM()
        let ec = String(
            decoding: try JSONSerialization.data(withJSONObject: [
                "project_id": "p", "client_email": "a@b", "private_key": ecKey,
            ]), as: UTF8.self)
        #expect(problem(ec).contains("not a usable RSA key"))
        let good = String(
            decoding: try JSONSerialization.data(withJSONObject: [
                "project_id": "p", "client_email": "a@b", "private_key": try RS256PrivateKey.generate().pkcs8PEM(),
                "token_uri": "ftp://x",
            ]), as: UTF8.self)
        #expect(problem(good).contains("token_uri must be an http(s):// URL"))
    }

    /// SPEC §3 "Notices": a device rung and not the one that ended the ring gets a `call_ended`
    /// data message; the device that answered gets nothing; a VoIP token never gets one.
    @Test func aRingsEndReachesEveryOtherRungDeviceAsACallEndedNotice() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        // Bob's phone (this session) and tablet (a second session), both Android; an iPhone too.
        let login = await env.app.request("POST", "/auth/login", body: #"{"username":"bob","password":"long enough"}"#)
        let tablet = CallWorld.Person(token: try #require(login.json?["token"] as? String), id: bob.id)
        let phoneToken = "phone:APA91-1", tabletToken = "tablet:APA91-2"
        for (person, token) in [(bob, phoneToken), (tablet, tabletToken)] {
            let registered = await env.app.request(
                "POST", "/push/devices", headers: person.headers,
                body:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","tokens":{"fcm":{"token":"\#(token)"}}}"#
            )
            #expect(registered.status == 200)
        }
        _ = await env.app.request(
            "POST", "/voip/devices", headers: tablet.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(String(repeating: "ef", count: 32))","environment":"production"}"#
        )
        let jobs = {
            try await env.app.application.store.read { connection in
                try connection.query(
                    "SELECT kind, channel, token, state, payload FROM push_jobs ORDER BY created_at_ms, kind DESC, token",
                    []
                ).map {
                    (
                        kind: try $0.string("kind"), channel: try $0.string("channel"), token: try $0.string("token"),
                        state: try $0.string("state"),
                        payload: try $0.string("payload")
                    )
                }
            }
        }

        // 1. Bob answers on his phone: the tablet is told, the phone is not, the iPhone's VoIP token never.
        let first = try #require(await env.world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "ring" }.allSatisfy { $0.state != "pending" }
            })
        #expect(await env.world.act("accept", first, by: bob).status == 200)
        #expect(
            try await eventuallyTrying { try await jobs().contains { $0.kind == "notice" && $0.state == "delivered" } })
        var notices = try await jobs().filter { $0.kind == "notice" }
        #expect(notices.count == 1 && notices.first?.token == tabletToken && notices.first?.channel == "fcm")
        let data = try #require(
            try JSONSerialization.jsonObject(with: Data((notices.first?.payload ?? "").utf8)) as? [String: String])
        #expect(
            data["type"] == "call_ended" && data["callId"] == first && data["reason"] == "answered_elsewhere"
                && data["callerName"] == "alice")
        #expect(env.fcm.sent.last?.kind == .notice && env.fcm.sent.last?.token == tabletToken)
        _ = await env.world.act("leave", first, by: bob)

        // 2. Alice cancels the next ring: both of Bob's Android devices are told (once their rings went out).
        let second = try #require(await env.world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "ring" }.allSatisfy { $0.state != "pending" }
            })
        #expect(await env.world.act("cancel", second, by: alice).status == 200)
        #expect(try await eventuallyTrying { try await jobs().filter { $0.kind == "notice" }.count == 3 })
        notices = try await jobs().filter { $0.kind == "notice" && $0.payload.contains(second) }
        #expect(Set(notices.map(\.token)) == [phoneToken, tabletToken] && notices.count == 2)
        #expect(notices.allSatisfy { $0.payload.contains(#""reason":"cancelled""#) })
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "notice" }.allSatisfy { $0.state == "delivered" }
            },
            "a notice goes out although its call no longer rings")

        // 3. Nobody answers the third: both are told it was missed.
        let third = try #require(await env.world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "ring" }.allSatisfy { $0.state != "pending" }
            })
        env.world.clock.advance(seconds: 46)
        #expect(try await eventuallyTrying { try await jobs().filter { $0.kind == "notice" }.count == 5 })
        let missed = try await jobs().filter { $0.kind == "notice" && $0.payload.contains(third) }
        #expect(missed.count == 2 && missed.allSatisfy { $0.payload.contains(#""reason":"missed""#) })
        #expect(
            try await jobs().allSatisfy { $0.channel != "ios-voip" || $0.kind == "ring" },
            "notices never go to a VoIP token")

        // 4. A device the ring never reached is not told: the tablet joins while the fourth rings.
        let fourth = try #require(await env.world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "ring" }.allSatisfy { $0.state != "pending" }
            })
        let late = "late:APA91-3"
        _ = await env.app.request(
            "POST", "/push/devices", headers: tablet.headers,
            body: #"{"deviceId":"\#(UUID().uuidString)","platform":"android","tokens":{"fcm":{"token":"\#(late)"}}}"#)
        #expect(await env.world.act("cancel", fourth, by: alice).status == 200)
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0.kind == "notice" && $0.payload.contains(fourth) }.count == 2
            })
        #expect(try await !jobs().contains { $0.token == late }, "never rung, never told")
    }

    /// A Huawei phone with both tokens is rung through Huawei Push Kit when this server has it
    /// configured (SPEC §7), and told there when the ring ends; result code 80300007 deletes
    /// the Huawei token, after which its rings go through FCM.
    @Test func aHuaweiPhoneIsRungThroughItsMakersChannelWhenConfigured() async throws {
        let fcm = ScriptedPushProvider(), huawei = ScriptedPushProvider()
        let world = try CallWorld(apnsTransport: ScriptedPushProvider(), fcmTransport: fcm, huaweiTransport: huawei)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let registered = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"HUAWEI","tokens":{"fcm":{"token":"f-1"},"huawei":{"token":"h-1"}}}"#
        )
        #expect(registered.status == 200)
        huawei.script("h-1", [.response(status: 200, reason: "80000000")])
        let first = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(await eventually { huawei.sent.count == 1 })
        #expect(huawei.sent.first?.channel == "huawei" && huawei.sent.first?.token == "h-1" && fcm.sent.isEmpty)
        let jobs = {
            try await world.app.application.store.read {
                try $0.query("SELECT kind, channel, state, reason FROM push_jobs", []).map {
                    [
                        try $0.string("kind"), try $0.string("channel"), try $0.string("state"),
                        try $0.optionalString("reason") ?? "",
                    ]
                }
            }
        }
        #expect(try await eventuallyTrying { try await jobs().contains { $0 == ["ring", "huawei", "delivered", ""] } })
        huawei.script("h-1", [.response(status: 200, reason: "80000000")])
        _ = await world.act("cancel", first, by: alice)
        #expect(await eventually { huawei.sent.count == 2 && huawei.sent.last?.kind == .notice })
        // Huawei says the token is dead: it goes, and the next ring takes FCM.
        huawei.script("h-1", [.response(status: 200, reason: "80300007")])
        let second = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying { try await jobs().contains { $0 == ["ring", "huawei", "failed", "80300007"] } })
        _ = await world.act("cancel", second, by: alice)
        _ = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(await eventually { fcm.sent.contains { $0.kind == .ring && $0.token == "f-1" } })
    }

    /// Xiaomi, OPPO and vivo phones are rung through their makers' channels when configured;
    /// when the ring is cancelled only Xiaomi (which has data messages) is told, and a missed
    /// call reaches all three; a channel that is off sends its phones' rings to FCM.
    @Test func xiaomiOppoAndVivoPhonesAreRungThroughTheirChannels() async throws {
        let fcm = ScriptedPushProvider(), xiaomi = ScriptedPushProvider(), oppo = ScriptedPushProvider(),
            vivo = ScriptedPushProvider()
        let world = try CallWorld(
            apnsTransport: ScriptedPushProvider(), fcmTransport: fcm,
            vendorTransports: ["xiaomi": xiaomi, "oppo": oppo, "vivo": vivo])
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        for (brand, channel) in [("xiaomi", "xiaomi"), ("oppo", "oppo"), ("vivo", "vivo")] {
            let login = await world.app.request(
                "POST", "/auth/login", body: #"{"username":"bob","password":"long enough"}"#)
            let session = CallWorld.Person(token: try #require(login.json?["token"] as? String), id: bob.id)
            let registered = await world.app.request(
                "POST", "/push/devices", headers: session.headers,
                body:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"\#(brand)","tokens":{"fcm":{"token":"f-\#(channel)"},"\#(channel)":{"token":"v-\#(channel)"}}}"#
            )
            #expect(registered.status == 200)
        }
        let providers = ["xiaomi": xiaomi, "oppo": oppo, "vivo": vivo]
        for (channel, provider) in providers {
            provider.script("v-\(channel)", Array(repeating: .response(status: 200, reason: "0"), count: 4))
        }
        let first = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        for (channel, provider) in providers {
            #expect(await eventually { provider.sent.count == 1 }, "\(channel) rang")
            #expect(
                provider.sent.first?.channel == channel && provider.sent.first?.token == "v-\(channel)"
                    && provider.sent.first?.kind == .ring)
        }
        #expect(fcm.sent.isEmpty, "every phone went through its maker")
        let jobs = {
            try await world.app.application.store.read {
                try $0.query("SELECT kind, channel, state FROM push_jobs", []).map {
                    [try $0.string("kind"), try $0.string("channel"), try $0.string("state")]
                }
            }
        }
        #expect(
            try await eventuallyTrying {
                try await jobs().filter { $0[0] == "ring" }.allSatisfy { $0[2] == "delivered" }
            })
        _ = await world.act("cancel", first, by: alice)
        #expect(await eventually { xiaomi.sent.count == 2 && xiaomi.sent.last?.kind == .notice })
        #expect(
            try await jobs().filter { $0[0] == "notice" }.map { $0[1] }.sorted() == ["oppo", "vivo", "xiaomi"],
            "every maker is told the ending (OPPO and vivo in place of the ring)")

        let second = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(
            try await eventuallyTrying {
                let all = try await jobs()
                return all.filter { $0[0] == "ring" }.count == 6 && all.allSatisfy { $0[2] != "pending" }
            })
        world.clock.advance(seconds: 46)
        #expect(
            try await eventuallyTrying {
                try await Set(jobs().filter { $0[0] == "notice" }.map { $0[1] }) == ["xiaomi", "oppo", "vivo"]
            })
        for (channel, provider) in providers {
            #expect(
                await eventually { provider.sent.last?.kind == .notice && provider.sent.last?.callID == second },
                "\(channel) told of the missed call")
            let data = try #require(VendorNotification.fields(of: provider.sent.last?.payload ?? []))
            #expect(data["type"] == "call_ended" && data["reason"] == "missed")
        }
    }

    /// Without its settings a maker's channel is off: its phones are rung through FCM, and a
    /// phone with only that maker's token gets a ring job that fails with the reason.
    @Test func anUnconfiguredMakerChannelFallsBackToFCM() async throws {
        let fcm = ScriptedPushProvider()
        let world = try CallWorld(apnsTransport: ScriptedPushProvider(), fcmTransport: fcm)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        _ = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"oppo","tokens":{"fcm":{"token":"f-1"},"oppo":{"token":"o-1"}}}"#
        )
        let login = await world.app.request(
            "POST", "/auth/login", body: #"{"username":"bob","password":"long enough"}"#)
        let tablet = CallWorld.Person(token: try #require(login.json?["token"] as? String), id: bob.id)
        _ = await world.app.request(
            "POST", "/push/devices", headers: tablet.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"vivo","tokens":{"vivo":{"token":"v-1"}}}"#
        )
        _ = try #require(await world.call(alice, "conversation", conversation).json?["id"] as? String)
        #expect(await eventually { fcm.sent.contains { $0.token == "f-1" } })
        let jobs = {
            try await world.app.application.store.read {
                try $0.query("SELECT channel, state, reason FROM push_jobs", []).map {
                    [try $0.string("channel"), try $0.string("state"), try $0.optionalString("reason") ?? ""]
                }
            }
        }
        #expect(
            try await eventuallyTrying {
                try await jobs().contains { $0 == ["vivo", "failed", PushChannelSummary.notConfiguredReason] }
            })
    }
}
