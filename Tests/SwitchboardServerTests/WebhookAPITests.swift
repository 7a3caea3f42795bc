import Foundation
import Glibc
import Synchronization
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardPush
import SwitchboardTesting
import Testing

@testable import SwitchboardServer

/// `/admin/webhooks` in process: what is refused, what each answer shows, rotation, and which
/// events become deliveries.
@Suite("Webhook endpoints", .serialized, .timeLimit(.minutes(2)))
struct WebhookAPITests {
    static let key = "webhook-api-test-key"
    static let admin: HTTPHeaders = ["Host": "t", "Authorization": "Bearer \(key)"]

    private func world() throws -> CallWorld {
        var configuration = ServerConfiguration()
        configuration.adminKey = Self.key
        return try CallWorld(configuration: configuration)
    }

    private func create(_ world: CallWorld, _ body: String, headers: HTTPHeaders = admin) async -> HTTPResponse {
        await world.app.request("POST", "/admin/webhooks", headers: headers, body: body)
    }

    @Test func badEndpointsAreRefusedNamingTheField() async throws {
        let world = try world()
        defer { world.close() }
        for (body, field) in [
            (#"{"url":"ftp://example.com/x"}"#, "url"), (#"{"url":"https://user:pw@example.com/"}"#, "url"),
            (#"{"url":"https://example.com/#frag"}"#, "url"), (#"{"url":"https:///nohost"}"#, "url"),
            (#"{"url":"https://example.com/a b"}"#, "url"), (#"{"url":"https://example.com/%zz"}"#, "url"),
            (#"{"url":"https://example.com/","events":["call.rung"]}"#, "events"),
            (#"{"url":"https://example.com/","events":["call.ended","call.ended"]}"#, "events"),
            (#"{"url":"https://example.com/","secret":"short"}"#, "secret"),
            (#"{"url":"https://example.com/","secret":"has a space in it...."}"#, "secret"),
        ] {
            let answer = await create(world, body)
            #expect(
                answer.status == 400
                    && answer.json?["error"].flatMap { ($0 as? [String: Any])?["field"] as? String } == field,
                "\(body): \(answer.text)")
        }
        let unauthorized = await world.app.request(
            "POST", "/admin/webhooks", headers: ["Host": "t"], body: #"{"url":"https://example.com/"}"#)
        #expect(unauthorized.status == 401)
    }

    @Test func anEndpointsSecretIsShownOnlyWhenMadeAndRotationKeepsTwo() async throws {
        let world = try world()
        defer { world.close() }
        let made = await create(world, #"{"url":"https://example.com/hooks?x=1","events":["call.ended"]}"#)
        #expect(made.status == 201)
        let id = try #require(made.json?["id"] as? String)
        let secret = try #require((made.json?["secrets"] as? [String])?.first)
        #expect(secret.hasPrefix("whsec_") && secret.count > 40)
        let shown = await world.app.request("GET", "/admin/webhooks/\(id)", headers: Self.admin)
        #expect(
            shown.json?["secrets"] is NSNull && (shown.json?["secretHints"] as? [String]) == [String(secret.suffix(4))])
        let rotated = await world.app.request(
            "POST", "/admin/webhooks/\(id)/secrets", headers: Self.admin,
            body: #"{"secret":"the-new-secret-0123456789"}"#)
        #expect((rotated.json?["secrets"] as? [String]) == ["the-new-secret-0123456789", secret])
        let again = await world.app.request(
            "POST", "/admin/webhooks/\(id)/secrets", headers: Self.admin, body: #"{}"#)
        #expect((again.json?["secrets"] as? [String])?.count == 2)
        #expect((again.json?["secrets"] as? [String])?.last == "the-new-secret-0123456789")
        let dropped = await world.app.request("DELETE", "/admin/webhooks/\(id)/secrets/previous", headers: Self.admin)
        #expect((dropped.json?["secretHints"] as? [String])?.count == 1)
        let changed = await world.app.request(
            "PATCH", "/admin/webhooks/\(id)", headers: Self.admin, body: #"{"enabled":false,"events":null}"#)
        #expect(changed.json?["enabled"] as? Bool == false && (changed.json?["events"] as? [String]) == ["call.ended"])
        let listed = await world.app.request("GET", "/admin/webhooks", headers: Self.admin)
        #expect((listed.json?["endpoints"] as? [[String: Any]])?.count == 1)
        #expect(await world.app.request("DELETE", "/admin/webhooks/\(id)", headers: Self.admin).status == 204)
        #expect(await world.app.request("GET", "/admin/webhooks/\(id)", headers: Self.admin).status == 404)
        #expect(await world.app.request("DELETE", "/admin/webhooks/\(id)", headers: Self.admin).status == 404)
    }

    @Test func onlyTheWantedEventsOfEnabledEndpointsBecomeDeliveries() async throws {
        let world = try world()
        defer { world.close() }
        let endedOnly = try #require(
            await create(world, #"{"url":"http://127.0.0.1:9/a","events":["call.ended"]}"#).json?["id"] as? String)
        let everything = try #require(await create(world, #"{"url":"http://127.0.0.1:9/b"}"#).json?["id"] as? String)
        let off = try #require(
            await create(world, #"{"url":"http://127.0.0.1:9/c","enabled":false}"#).json?["id"] as? String)
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(await world.act("decline", call.id, by: bob).status == 200)
        func types(_ endpoint: String) async throws -> [String] {
            let jobs = try await world.app.application.store.snapshot {
                try $0.outboxJobs.jobs(of: .webhook, target: endpoint, limit: 100)
            }
            return jobs.reversed().compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any])?["type"] as? String
            }
        }
        #expect(try await types(endedOnly) == ["call.ended"])
        #expect(try await types(everything) == ["call.ringing", "call.declined", "call.ended"])
        #expect(try await types(off).isEmpty)
        // A pending delivery is not resent: it goes by itself.
        let pending = try #require(
            await world.app.request("GET", "/admin/webhooks/\(endedOnly)/deliveries", headers: Self.admin)
                .json?["deliveries"] as? [[String: Any]])
        let deliveryID = try #require(pending.first?["id"] as? String)
        let resend = await world.app.request(
            "POST", "/admin/webhooks/\(endedOnly)/deliveries/\(deliveryID)/resend", headers: Self.admin)
        #expect(resend.status == 409 && resend.errorCode == "DELIVERY_PENDING")
        let elsewhere = await world.app.request(
            "POST", "/admin/webhooks/\(everything)/deliveries/\(deliveryID)/resend", headers: Self.admin)
        #expect(elsewhere.status == 404)
    }

    /// The events a webhook endpoint `endpoint` was given, as `(type, data)`, oldest first.
    static func events(_ world: CallWorld, _ endpoint: String) async throws -> [(String, [String: Any])] {
        let jobs = try await world.app.application.store.snapshot {
            try $0.outboxJobs.jobs(of: .webhook, target: endpoint, limit: 100)
        }
        return jobs.reversed().compactMap {
            guard let event = try? JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any],
                let type = event["type"] as? String, let data = event["data"] as? [String: Any]
            else { return nil }
            return (type, data)
        }
    }

    @Test func aTokenThePushServiceRemovedIsAPushFailedEvent() async throws {
        var configuration = ServerConfiguration()
        configuration.adminKey = Self.key
        let fcm = ScriptedPushProvider()
        let world = try CallWorld(
            configuration: configuration, apnsTransport: ScriptedPushProvider(), fcmTransport: fcm)
        defer { world.close() }
        let endpoint = try #require(
            await create(world, #"{"url":"http://127.0.0.1:9/","events":["push.failed"]}"#).json?["id"] as? String)
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let device = UUID().uuidString.lowercased()
        let registered = await world.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: #"{"deviceId":"\#(device)","platform":"android","tokens":{"fcm":{"token":"fcm-token-of-bob-0001"}}}"#)
        #expect(registered.status == 200)
        fcm.script("fcm-token-of-bob-0001", [.response(status: 404, reason: "UNREGISTERED")])
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await Self.events(world, endpoint).count == 1 })
        let (type, data) = try #require(try await Self.events(world, endpoint).first)
        #expect(type == "push.failed")
        #expect(
            data["userId"] as? String == bob.id && data["deviceId"] as? String == device
                && data["channel"] as? String == "fcm" && data["tokenSuffix"] as? String == "bob-0001"
                && data["callId"] as? String == call.id && data["reason"] as? String == "UNREGISTERED"
                && data["removed"] as? Bool == true)
    }

    @Test func aGatewaySignalThatFinishedIsAnEvent() async throws {
        let env = try await GatewaySignalTests.World()
        defer { env.world.close() }
        let endpoint = try #require(
            await create(
                env.world, #"{"url":"http://127.0.0.1:9/","events":["gateway.signal.finished"]}"#,
                headers: GatewayTests.admin
            )
            .json?["id"] as? String)
        try await env.device(
            "bob", GatewaySignalTests.pixel, platform: "android", tokens: #"{"fcm":{"token":"fcm-bob"}}"#)
        // Nobody to ring: finished at once. Bob's phone: finished once its ring was delivered.
        _ = try await env.signal("call-nobody", to: ["nobody"])
        _ = try await env.signal("call-bob", to: ["bob"])
        #expect(try await eventuallyTrying { try await Self.events(env.world, endpoint).count == 2 })
        let events = try await Self.events(env.world, endpoint)
        let signals = events.compactMap { $0.1["signal"] as? [String: Any] }
        #expect(events.allSatisfy { $0.0 == "gateway.signal.finished" && $0.1["appId"] as? String == "acme" })
        #expect(signals.map { $0["callId"] as? String } == ["call-nobody", "call-bob"])
        let devices = signals.last?["devices"] as? [[String: Any]] ?? []
        #expect(devices.count == 1 && devices.first?["state"] as? String == "delivered")
        // Nothing more: a finished signal is told once.
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await Self.events(env.world, endpoint).count == 2)
    }

    @Test func aRedirectIsNeverFollowedAndCountsAsAFailure() async throws {
        let world = try world()
        defer { world.close() }
        let hits = Atomic<Int>(0)
        let elsewhere = HTTPServer(configuration: HTTPServerConfiguration(port: 0, loopCount: 1)) { _ in
            hits.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200)
        }
        let target = try elsewhere.start()
        defer { elsewhere.stopNow() }
        let redirecting = HTTPServer(configuration: HTTPServerConfiguration(port: 0, loopCount: 1)) { _ in
            HTTPResponse(status: 307, headers: ["Location": "http://127.0.0.1:\(target.port)/taken"])
        }
        let redirect = try redirecting.start()
        defer { redirecting.stopNow() }
        let endpoint = try #require(
            await create(world, #"{"url":"http://127.0.0.1:\#(redirect.port)/hook","events":["call.ringing"]}"#)
                .json?["id"] as? String)
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        _ = try #require(await world.call(alice, "conversation", conversation).call)
        func delivery() async -> [String: Any]? {
            (await world.app.request("GET", "/admin/webhooks/\(endpoint)/deliveries", headers: Self.admin)
                .json?["deliveries"] as? [[String: Any]])?.first
        }
        #expect(await eventually { await delivery()?["lastStatus"] as? Int == 307 })
        let pending = try #require(await delivery())
        #expect(pending["state"] as? String == "pending" && pending["attempts"] as? Int == 1)
        #expect((pending["lastError"] as? String)?.contains("redirect") == true)
        #expect(hits.load(ordering: .relaxed) == 0)
    }

    /// Python's `http.server` answers HTTP/1.0, here with 100 KB of page after its 200: both
    /// are a delivery.
    @Test func anHTTP10AnswerWithALongBodyIsADelivery() async throws {
        let world = try world()
        defer { world.close() }
        let port = try NginxExampleLiveTests.freePort()
        let script = """
            import http.server, sys
            class H(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    self.rfile.read(int(self.headers.get("Content-Length", "0")))
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.end_headers()
                    self.wfile.write(b"<p>thanks</p>" * 8000)
                def log_message(self, *args):
                    pass
            http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
            """
        let receiver = Process()
        // Debian's own Python, started directly: the process killed below is the server itself.
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        receiver.arguments = ["-c", script, String(port)]
        receiver.standardOutput = FileHandle.nullDevice
        receiver.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(receiver)
        // Killed, not waited for: `waitUntilExit()` spins a run loop on this (pool) thread, and
        // Foundation reaps the process by itself.
        defer { kill(receiver.processIdentifier, SIGKILL) }
        let endpoint = try #require(
            await create(world, #"{"url":"http://127.0.0.1:\#(port)/hook","events":["call.ringing"]}"#)
                .json?["id"] as? String)
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        // Until the receiver listens the attempts fail; the runner retries on the manual clock.
        _ = try #require(await world.call(alice, "conversation", conversation).call)
        func delivery() async -> [String: Any]? {
            (await world.app.request("GET", "/admin/webhooks/\(endpoint)/deliveries", headers: Self.admin)
                .json?["deliveries"] as? [[String: Any]])?.first
        }
        #expect(
            await eventually {
                if await delivery()?["state"] as? String == "done" { return true }
                world.clock.advance(seconds: 10)
                try? await Task.sleep(for: .milliseconds(50))
                return false
            })
        #expect(await delivery()?["lastStatus"] as? Int == 200)
    }

    @Test func theSignatureIsHMACSHA256OfTimestampDotBody() {
        let body = Array(#"{"id":"evt_1","type":"call.ended"}"#.utf8)
        let header = WebhookSignature.header(body: body, secrets: ["whsec_a", "whsec_b"], at: 1_800_000_000)
        let expected = SHA256HMACVector.hex(
            key: "whsec_a", message: "1800000000." + String(decoding: body, as: UTF8.self))
        #expect(header.hasPrefix("t=1800000000,v1=\(expected),v1="))
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["whsec_b"], now: 1_800_000_299) == .valid)
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["whsec_b"], now: 1_800_000_301) == .stale)
        #expect(
            WebhookSignature.verify(header: header, body: body + [32], secrets: ["whsec_a"], now: 1_800_000_000)
                == .mismatch)
        #expect(WebhookSignature.verify(header: "v1=abc", body: body, secrets: ["whsec_a"], now: 0) == .malformed)
        // A hostile timestamp is stale, never an overflow.
        let hostile = "t=-9223372036854775808,v1=00"
        #expect(
            WebhookSignature.verify(header: hostile, body: body, secrets: ["whsec_a"], now: 1_800_000_000) == .stale)
        #expect(
            WebhookSignature.verify(header: "t=9223372036854775807,v1=00", body: body, secrets: ["a"], now: .max)
                == .mismatch)
    }
}

/// HMAC-SHA256 as RFC 2104 defines it, from SHA-256 alone: an independent check of the one the
/// signatures use.
enum SHA256HMACVector {
    static func hex(key: String, message: String) -> String {
        var keyBytes = Array(key.utf8)
        if keyBytes.count > 64 { keyBytes = SHA256.hash(keyBytes) }
        keyBytes += [UInt8](repeating: 0, count: 64 - keyBytes.count)
        let inner = SHA256.hash(keyBytes.map { $0 ^ 0x36 } + Array(message.utf8))
        return SHA256.hex(keyBytes.map { $0 ^ 0x5c } + inner)
    }
}
