import Foundation
import Testing
import SwitchboardTesting
import SwitchboardCrypto
@testable import SwitchboardCore
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer

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
                body: #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"google","tokens":{"fcm":{"token":"\#(fcmToken)"}}}"#)
        }

        func job() async throws -> (state: String, reason: String?, attempts: Int, next: Int64)? {
            try await app.application.store.read { connection in
                try connection.query("SELECT state, reason, attempts, next_attempt_at_ms FROM push_jobs WHERE channel = 'fcm'", []).first.map {
                    (try $0.string("state"), try $0.optionalString("reason"), try $0.int("attempts"), try $0.int64("next_attempt_at_ms"))
                }
            }
        }

        func tokens() async throws -> Int {
            try await app.application.store.read { try $0.query("SELECT count(*) AS n FROM push_devices WHERE channel = 'fcm'", []).first?.int("n") ?? -1 }
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
        let data = try #require(try JSONSerialization.jsonObject(with: Data(sent.payload)) as? [String: String], "every value a string")
        #expect(data["type"] == "call" && data["callId"] == call.id && data["mode"] == "video" && data["callerName"] == "alice")
        #expect(sent.expiresAt.timeIntervalSince(env.world.clock.now) <= 45, "no longer than the ring window")
    }

    @Test func unregisteredDeletesTheTokenAndQuotaExceededWaitsItsRetryAfter() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.registerAndroid(bob)
        env.fcm.script(fcmToken, [.response(status: 429, reason: "QUOTA_EXCEEDED", retryAfter: 6)])
        let start = CallStore.milliseconds(env.world.clock.now)
        let call = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.job()?.attempts == 1 })
        let retry = try #require(try await env.job())
        #expect(retry.state == "pending" && retry.reason == "QUOTA_EXCEEDED")
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
            configuration.fcmServiceAccountFile = directory.path + "/account.json"
            if let contents { try? contents.write(toFile: configuration.fcmServiceAccountFile, atomically: true, encoding: .utf8) }
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
        #expect(problem(#"{"type":"authorized_user","project_id":"p","client_email":"a@b"}"#).contains("not 'service_account'"))
        let ecKey = try ES256PrivateKey.generate().pkcs8PEM()
        let ec = String(decoding: try JSONSerialization.data(withJSONObject: ["project_id": "p", "client_email": "a@b", "private_key": ecKey]), as: UTF8.self)
        #expect(problem(ec).contains("not a usable RSA key"))
        let good = String(decoding: try JSONSerialization.data(withJSONObject: [
            "project_id": "p", "client_email": "a@b", "private_key": try RS256PrivateKey.generate().pkcs8PEM(), "token_uri": "ftp://x",
        ]), as: UTF8.self)
        #expect(problem(good).contains("token_uri must be an http(s):// URL"))
    }
}
