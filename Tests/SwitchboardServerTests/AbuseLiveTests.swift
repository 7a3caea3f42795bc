import Foundation
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardTesting
@testable import SwitchboardServer
import Testing

/// What one person could do to others before wave 3's limits, each reproduced against the
/// real binary with its shipped defaults, and refused now.
@Suite(
    "Abuse: no friend can silence or flood a phone, no stranger can wear the server down", .serialized,
    .timeLimit(.minutes(5)))
struct AbuseLiveTests {
    private static let environment = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"]

    func launchAbuse(_ extra: [String: String] = [:]) async throws -> (ServerProcess, ScratchDirectory) {
        try await launch(extra)
    }

    static func errorCode(_ body: String) -> String? { code(body) }

    private func launch(_ extra: [String: String] = [:]) async throws -> (ServerProcess, ScratchDirectory) {
        let data = ScratchDirectory()
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: Self.environment.merging(extra) { $1 })
        return (server, data)
    }

    private static func code(_ body: String) -> String? {
        (liveJSON(body)["error"] as? [String: Any])?["code"] as? String
    }

    @Test func anotherUsersDeviceOrTokenIsNotTakenOver() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let victim = try await liveRegister(server.address, "victim"),
            attacker = try await liveRegister(server.address, "attacker")
        let device = UUID().uuidString.lowercased(), token = String(repeating: "ab", count: 32)
        let registered = await fetch(
            server.address, "POST", "/voip/devices",
            body: #"{"deviceId":"\#(device)","pushToken":"\#(token)","environment":"production"}"#,
            headers: victim.auth)
        #expect(registered.status == 200, "\(registered.body)")
        let sameID = await fetch(
            server.address, "POST", "/voip/devices",
            body:
                #"{"deviceId":"\#(device)","pushToken":"\#(String(repeating: "cd", count: 32))","environment":"production"}"#,
            headers: attacker.auth)
        #expect(sameID.status == 409 && Self.code(sameID.body) == "DEVICE_ID_TAKEN", "\(sameID.body)")
        let sameToken = await fetch(
            server.address, "POST", "/push/devices",
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(token)","environment":"production"}}}"#,
            headers: attacker.auth)
        #expect(sameToken.status == 409 && Self.code(sameToken.body) == "PUSH_TOKEN_TAKEN", "\(sameToken.body)")
        // The victim's device is still theirs to remove.
        #expect(await fetch(server.address, "DELETE", "/voip/devices/\(device)", headers: victim.auth).status == 204)
    }

    @Test func ringSpamFromOneFriendIsAnswered429AndRegistrationsFromOneAddressAreThrottled() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let alice = try await liveRegister(server.address, "alice"), bob = try await liveRegister(server.address, "bob")
        let conversation = try await liveBefriend(server.address, alice, bob)
        var statuses: [Int] = []
        var retryAfter: String?
        for _ in 0..<6 {
            let created = await fetch(
                server.address, "POST", "/calls",
                body:
                    #"{"scopeKind":"conversation","scopeId":"\#(conversation)","mode":"audio","clientId":"\#(UUID().uuidString)"}"#,
                headers: alice.auth)
            statuses.append(created.status)
            if created.status == 429 {
                retryAfter = created.headers.split(separator: "\r\n").first {
                    $0.lowercased().hasPrefix("retry-after:")
                }.map(String.init)
                #expect(Self.code(created.body) == "RATE_LIMITED")
            } else if let id = liveJSON(created.body)["id"] as? String {
                #expect(await fetch(server.address, "POST", "/calls/\(id)/cancel", headers: alice.auth).status == 200)
            }
        }
        #expect(statuses == [201, 201, 201, 201, 429, 429], "4 calls to one callee a minute, then 429")
        #expect(retryAfter != nil)
        // Registrations: 20 an hour from one address (2 above), then 429 before any hashing.
        var registered = 2
        var refused = 0
        for index in 0..<20 {
            let reply = await fetch(
                server.address, "POST", "/auth/register",
                body: #"{"username":"flood\#(index)","password":"long enough","displayName":"F"}"#)
            if reply.status == 201 { registered += 1 } else if reply.status == 429 { refused += 1 }
        }
        #expect(registered == 20 && refused == 2, "registered \(registered), refused \(refused)")
    }

    @Test func randomMethodsLeaveMetricsBoundedAndAdminRoutesAnswer401WhenOff() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        for index in 0..<200 { _ = await fetch(server.address, "M\(index)X", "/healthz") }
        let metrics = await fetch(server.address, "GET", "/metrics").body
        #expect(!metrics.contains("M17X"), "no method outside the fixed set becomes a label")
        #expect(metrics.contains(#"method="other""#))
        #expect(metrics.split(separator: "\n").filter { $0.hasPrefix("switchboard_http_requests_total{") }.count < 20)
        let admin = await fetch(server.address, "GET", "/admin/push/status")
        #expect(admin.status == 401, "\(admin.body)")
        let keyed = await fetch(
            server.address, "GET", "/admin/push/status", headers: ["Authorization": "Bearer 0123456789abcdef"])
        #expect(keyed.status == 403 && Self.code(keyed.body) == "ADMIN_DISABLED")
    }

    @Test func aStreamEndsWithinSecondsOfLogoutAndPasswordChangeEndsTheOtherSessions() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let carol = try await liveRegister(server.address, "carol"), dan = try await liveRegister(server.address, "dan")
        let started = Date()
        async let stream = fetch(server.address, "GET", "/events/stream?after=0", headers: carol.auth)
        // Events keep coming for her while the stream runs (friend requests from dan).
        try await Task.sleep(for: .milliseconds(300))
        #expect(await fetch(server.address, "POST", "/auth/logout", headers: carol.auth).status == 204)
        _ = await fetch(
            server.address, "POST", "/friend-requests", body: #"{"userId":"\#(carol.id)"}"#, headers: dan.auth)
        let ended = await stream
        #expect(ended.body.hasSuffix("0\r\n\r\n"), "the server ended the stream: \(ended.body.suffix(60))")
        #expect(
            Date().timeIntervalSince(started) < generousWait, "well before the heartbeat's 15 s and the read timeout")
        // A password change ends every other session, and the old password no longer works.
        let login = await fetch(
            server.address, "POST", "/auth/login", body: #"{"username":"dan","password":"long enough"}"#)
        let second = LiveAccount(token: try #require(liveJSON(login.body)["token"] as? String), id: dan.id)
        let changed = await fetch(
            server.address, "POST", "/auth/password",
            body: #"{"currentPassword":"long enough","newPassword":"longer still"}"#, headers: dan.auth)
        #expect(changed.status == 204, "\(changed.body)")
        #expect(await fetch(server.address, "GET", "/me", headers: second.auth).status == 401)
        #expect(await fetch(server.address, "GET", "/me", headers: dan.auth).status == 200)
        #expect(await fetch(server.address, "POST", "/auth/logout-all", headers: dan.auth).status == 204)
        #expect(await fetch(server.address, "GET", "/me", headers: dan.auth).status == 401)
        #expect(
            await fetch(server.address, "POST", "/auth/login", body: #"{"username":"dan","password":"long enough"}"#)
                .status == 401)
    }

    @Test func aFloodingRelaySocketIsClosedWith4008() async throws {
        let relay = RelayLiveTests()
        let (server, data) = try await relay.launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let (_, _, _, aliceMedia, bobMedia) = try await relay.answeredCall(server.address)
        let alice = try await AudioPeer.connect(server.address, path: aliceMedia.path, token: aliceMedia.token)
        let bob = try await AudioPeer.connect(server.address, path: bobMedia.path, token: bobMedia.token)
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "2" })
        // Far faster than real time (50 frames a second): 3,000 frames at once.
        for _ in 0..<3000 { alice.send(constant: 3) }
        #expect(await eventually { alice.closed?.code == 4008 }, "closed: \(String(describing: alice.closed))")
        #expect(bob.heard.count <= 200, "bob heard \(bob.heard.count) frames: at most about the limit passed")
        #expect(bob.closed == nil)
    }

    @Test func gatewayRequestsSignedTheVersion1WayAreRefused() async throws {
        let adminKey = "abuse-admin-key-0123456789"
        let (server, data) = try await launch(["SWITCHBOARD_ADMIN_KEY": adminKey])
        defer {
            _ = server.stop()
            data.remove()
        }
        let key = try Ed25519PrivateKey.generate()
        let created = await fetch(
            server.address, "POST", "/admin/gateway/apps",
            body:
                #"{"id":"acme","name":"Acme","keys":[{"keyId":"k1","publicKey":"\#(Base64URL.encode(key.publicKey.rawBytes))"}]}"#,
            headers: ["Authorization": "Bearer \(adminKey)"])
        #expect(created.status == 201, "\(created.body)")
        func signed(version: Int) async throws -> (status: Int, headers: String, body: String) {
            let stamp = String(Int64(Date().timeIntervalSince1970)), target = "/gateway/v1/app?v=\(version)"
            let message =
                version == 2
                ? GatewaySignature.canonical(
                    app: "acme", key: "k1", method: "GET", target: target, timestamp: stamp, body: [])
                : GatewaySignature.canonicalV1(method: "GET", target: target, timestamp: stamp, body: [])
            var headers = [
                "Switchboard-App": "acme", "Switchboard-Key": "k1", "Switchboard-Timestamp": stamp,
                "Switchboard-Signature": Base64URL.encode(try key.sign(message)),
            ]
            if version == 2 { headers["Switchboard-Signature-Version"] = "2" }
            return await fetch(server.address, "GET", target, headers: headers)
        }
        let v1 = try await signed(version: 1)
        #expect(v1.status == 401 && Self.code(v1.body) == "GATEWAY_SIGNATURE_V1", "\(v1.body)")
        #expect(try await signed(version: 2).status == 200)
    }
}
