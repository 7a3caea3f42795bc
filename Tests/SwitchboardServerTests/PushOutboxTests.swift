import Foundation
import Synchronization
import Testing
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardWire
import SwitchboardPushCore

/// A push provider that answers from a script (per token, in order; 200 when the script is empty).
final class ScriptedPushProvider: PushTransport {
    private let state = Mutex<(script: [String: [PushSendResult]], sent: [PushJob])>(([:], []))
    var name: String { "apns" }

    func script(_ token: String, _ results: [PushSendResult]) { state.withLock { $0.script[token] = results } }
    var sent: [PushJob] { state.withLock { $0.sent } }

    func send(_ job: PushJob) async -> PushSendResult {
        state.withLock { state in
            state.sent.append(job)
            guard var queue = state.script[job.token], !queue.isEmpty else {
                return .response(status: 200, reason: nil)
            }
            let next = queue.removeFirst()
            state.script[job.token] = queue
            return next
        }
    }
}

private let tokenA = String(repeating: "ab", count: 32)
private let tokenB = String(repeating: "cd", count: 32)

@Suite("Push devices and the outbox", .serialized, .timeLimit(.minutes(3)))
struct PushOutboxTests {
    private struct World {
        let world: CallWorld
        let provider: ScriptedPushProvider
        var app: TestApplication { world.app }

        init(adminKey: String = "") throws {
            let provider = ScriptedPushProvider()
            self.provider = provider
            var configuration = ServerConfiguration()
            configuration.push.apns.bundleID = "com.example.phone"
            configuration.adminKey = adminKey
            world = try CallWorld(configuration: configuration, apnsTransport: provider)
        }

        func register(
            _ person: CallWorld.Person, device: String = UUID().uuidString, token: String,
            environment: String = "production"
        ) async -> HTTPResponse {
            await app.request(
                "POST", "/voip/devices", headers: person.headers,
                body: #"{"deviceId":"\#(device)","pushToken":"\#(token)","environment":"\#(environment)"}"#)
        }

        func jobs() async throws -> [(state: String, reason: String?, token: String, attempts: Int, id: String)] {
            try await app.application.store.read { connection in
                try connection.query("SELECT * FROM push_jobs ORDER BY created_at_ms, id", []).map {
                    (
                        try $0.string("state"), try $0.optionalString("reason"), try $0.string("token"),
                        try $0.int("attempts"), try $0.string("id")
                    )
                }
            }
        }

        func devices() async throws -> [String] {
            try await app.application.store.read {
                try $0.query("SELECT token FROM push_devices ORDER BY token", []).map { try $0.string("token") }
            }
        }

        /// Polls until `condition` holds on the jobs (the real dispatcher runs in the background),
        /// with a generous bound.
        func waitForJobs(
            _ condition:
                @escaping ([(state: String, reason: String?, token: String, attempts: Int, id: String)]) -> Bool
        ) async throws -> Bool {
            try await eventuallyTrying { condition(try await jobs()) }
        }

        /// The dispatcher has finished its sends and sleeps on the manual clock.
        func dispatcherAsleep() async throws -> Bool {
            try await eventuallyTrying {
                app.application.dispatcher.inFlightCount == 0
                    && world.clock.sleeperCount(of: PushDispatcher.loopName) >= 1
            }
        }
    }

    @Test(arguments: [
        (#"{"deviceId":"nope","pushToken":"\#(tokenA)","environment":"production"}"#, "deviceId"),
        (#"{"deviceId":"\#(UUID().uuidString)","pushToken":"xyz","environment":"production"}"#, "pushToken"),
        (#"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(tokenA)a","environment":"production"}"#, "pushToken"),
        (
            #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(String(repeating: "g", count: 64))","environment":"production"}"#,
            "pushToken"
        ),
        (#"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(tokenA)","environment":"development"}"#, "environment"),
        (#"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(tokenA)"}"#, "environment"),
    ])
    func badDeviceRegistrationsAre400NamingTheField(body: String, field: String) async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice")
        let response = await env.app.request("POST", "/voip/devices", headers: alice.headers, body: body)
        #expect(response.status == 400)
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == field)
    }

    @Test func registrationReplacesMovesAndUnbinds() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let device = UUID().uuidString
        let first = await env.register(alice, device: device, token: tokenA.uppercased())
        #expect(first.status == 200)
        #expect(first.json?["tokenSuffix"] as? String == String(tokenA.suffix(8)))
        #expect(!first.text.contains(tokenA))  // the token is never echoed whole
        // Re-registering the device replaces its token.
        _ = await env.register(alice, device: device, token: tokenB)
        #expect(try await env.devices() == [tokenB])
        // Another account cannot take the token, nor the installation, while her session lives.
        let taken = await env.register(bob, token: tokenB)
        #expect(taken.status == 409 && taken.text.contains("PUSH_TOKEN_TAKEN"), "\(taken.text)")
        let takenID = await env.register(bob, device: device, token: tokenA)
        #expect(takenID.status == 409 && takenID.text.contains("DEVICE_ID_TAKEN"), "\(takenID.text)")
        #expect(try await env.devices() == [tokenB])
        // Logout unbinds the session's devices; then the installation's own registration may bind
        // the token to bob.
        #expect(await env.app.request("POST", "/auth/logout", headers: alice.headers).status == 204)
        #expect(try await env.devices().isEmpty)
        #expect(await env.register(bob, device: device, token: tokenB).status == 200)
        #expect(try await env.devices() == [tokenB])
        #expect(await env.app.request("DELETE", "/voip/devices/\(device)", headers: alice.headers).status == 401)
    }

    @Test func aCallRingsTheInviteesDeviceWithTheExactPush() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        _ = await env.register(alice, token: tokenB)  // the caller's own device is not rung
        let call = try #require(await env.world.call(alice, "conversation", conversation, mode: "video").call)
        #expect(try await env.waitForJobs { $0.count == 1 && $0[0].state == "delivered" })
        let sent = try #require(env.provider.sent.first)
        #expect(env.provider.sent.count == 1 && sent.token == tokenA)
        let headers = Dictionary(uniqueKeysWithValues: sent.headers)
        #expect(headers["apns-push-type"] == "voip")
        #expect(headers["apns-topic"] == "com.example.phone.voip")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "call_\(call.id)")
        #expect(headers["apns-id"] == sent.id)
        let deadline = Int(env.world.clock.now.timeIntervalSince1970) + 45
        #expect(headers["apns-expiration"] == String(deadline))
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(sent.payload)) as? [String: Any])
        #expect(payload["callId"] as? String == call.id && payload["mode"] as? String == "video")
        #expect(payload["callerName"] as? String == "alice" && payload["scopeKind"] as? String == "conversation")
        #expect(payload["aps"] != nil && payload["groupName"] == nil)
        #expect(!String(decoding: sent.payload, as: UTF8.self).contains("token"))
    }

    @Test func unregisteredDeletesTheTokenAndFailsTheJob() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(tokenA, [.response(status: 410, reason: "Unregistered")])
        _ = await env.world.call(alice, "conversation", conversation)
        #expect(try await env.waitForJobs { $0.first?.state == "failed" })
        #expect(try await env.jobs().first?.reason == "Unregistered")
        #expect(try await env.devices().isEmpty)
    }

    @Test func aServerErrorIsRetriedWithTheSameApnsIDThenDelivered() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(
            tokenA, [.response(status: 500, reason: "InternalServerError"), .transportFailure("timed out")])
        _ = await env.world.call(alice, "conversation", conversation)
        #expect(try await env.waitForJobs { $0.first?.attempts == 1 })
        env.world.clock.advance(seconds: 1.6)  // past min(2^0, 8) + jitter
        #expect(try await env.waitForJobs { $0.first?.attempts == 2 })
        env.world.clock.advance(seconds: 2.6)
        #expect(try await env.waitForJobs { $0.first?.state == "delivered" })
        let ids = Set(env.provider.sent.map(\.id))
        #expect(env.provider.sent.count == 3 && ids.count == 1)
        #expect(Set(env.provider.sent.map { Dictionary(uniqueKeysWithValues: $0.headers)["apns-id"] }) == [ids.first])
    }

    @Test func aCancelledCallsPendingJobIsDroppedNeverSent() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(tokenA, [.response(status: 503, reason: "ServiceUnavailable")])
        let call = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await env.waitForJobs { $0.first?.attempts == 1 })
        #expect(await env.world.act("cancel", call.id, by: alice).status == 200)
        env.world.clock.advance(seconds: 2)
        #expect(try await env.waitForJobs { $0.first?.state == "dropped" })
        #expect(try await env.jobs().first?.reason == "call_not_ringing")
        #expect(env.provider.sent.count == 1)
    }

    @Test func retriesStopAtTheRingWindowAsExpired() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(tokenA, Array(repeating: .response(status: 503, reason: "ServiceUnavailable"), count: 50))
        _ = await env.world.call(alice, "conversation", conversation)
        for _ in 0..<12 {
            #expect(try await env.dispatcherAsleep())
            env.world.clock.advance(seconds: 8.6)
            #expect(try await env.dispatcherAsleep())
            if try await env.jobs().first?.state != "pending" { break }
        }
        #expect(try await env.waitForJobs { $0.first?.state == "expired" || $0.first?.state == "dropped" })
        // The ring timeout may end the call first (dropped) or the window closes (expired): never sent after it.
        let sentTimes = env.provider.sent.count
        #expect(sentTimes >= 2 && sentTimes <= 8)
    }

    @Test func badDeviceTokenIsDeletedOnlyWhenItRepeats() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(
            tokenA,
            [.response(status: 400, reason: "BadDeviceToken"), .response(status: 400, reason: "BadDeviceToken")])
        let first = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await env.waitForJobs { $0.count == 1 && $0[0].state == "failed" })
        #expect(try await env.devices() == [tokenA])  // one answer may be an environment mix-up
        _ = await env.world.act("cancel", first.id, by: alice)
        _ = await env.world.call(alice, "conversation", conversation)
        #expect(try await env.waitForJobs { $0.count == 2 && $0.allSatisfy { $0.state == "failed" } })
        #expect(try await env.devices().isEmpty)
    }

    @Test func theAdminViewShowsTheQueueAndOutcomes() async throws {
        let key = "admin-key-0123456789"
        let env = try World(adminKey: key)
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        _ = await env.register(bob, token: tokenA)
        env.provider.script(tokenA, [.response(status: 400, reason: "TopicDisallowed")])
        _ = await env.world.call(alice, "conversation", conversation)
        #expect(try await env.waitForJobs { $0.first?.state == "failed" })
        #expect(await env.app.request("GET", "/admin/push/status").status == 401)
        #expect(
            await env.app.request(
                "GET", "/admin/push/status", headers: ["Host": "t", "Authorization": "Bearer wrong-key-0123456789"]
            ).status == 401)
        #expect(await env.app.request("GET", "/admin/push/status", headers: alice.headers).status == 401)
        let status = await env.app.request(
            "GET", "/admin/push/status", headers: ["Host": "t", "Authorization": "Bearer \(key)"])
        #expect(status.status == 200)
        let object = try #require(status.json)
        #expect(object["pending"] as? Int == 0)
        let outcomes = try #require(object["outcomes"] as? [[String: Any]])
        #expect(
            outcomes.first?["state"] as? String == "failed" && outcomes.first?["reason"] as? String == "TopicDisallowed"
        )
        let failures = try #require(object["newestFailures"] as? [[String: Any]])
        #expect(failures.first?["tokenSuffix"] as? String == String(tokenA.suffix(8)))
        #expect(!status.text.contains(tokenA))
        // The counter moves just after the outcome is stored.
        #expect(
            try await eventuallyTrying {
                await env.app.request("GET", "/metrics").text
                    .contains(
                        #"switchboard_push_jobs_total{provider="apns",channel="ios-voip",outcome="failed",reason="TopicDisallowed"} 1"#
                    )
            })
        #expect(await env.app.request("GET", "/metrics").text.contains("switchboard_push_jobs_pending "))
    }

    @Test func withoutAPNsConfiguredJobsFailVisibly() async throws {
        let key = "admin-key-0123456789"
        var configuration = ServerConfiguration()
        configuration.adminKey = key
        let world = try CallWorld(configuration: configuration)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        _ = await world.app.request(
            "POST", "/voip/devices", headers: bob.headers,
            body: #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(tokenA)","environment":"sandbox"}"#)
        _ = await world.call(alice, "conversation", conversation)
        let failedVisibly = try await eventuallyTrying {
            try await world.app.application.store.read {
                try $0.query("SELECT reason FROM push_jobs WHERE state = 'failed'", []).first?.optionalString("reason")
            } == "ProviderNotConfigured"
        }
        #expect(failedVisibly)
    }
}
