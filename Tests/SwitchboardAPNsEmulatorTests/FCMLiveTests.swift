import Foundation
import Synchronization
import Testing
import SwitchboardAPNsEmulator
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardTesting
import SwitchboardPushCore

/// The FCM channel's transport against the emulator's FCM stand-in, over loopback h2c: the
/// OAuth2 exchange, the message FCM gets, and the answers the reason table reads.
@Suite("FCM transport against the emulator", .serialized, .timeLimit(.minutes(2)))
struct FCMLiveTests {
    static let key = try! RS256PrivateKey.generate()

    struct Rig {
        let emulator: APNsEmulator
        let transport: FCMTransport
        let base: String

        func stop() async {
            await transport.shutdown()
            await emulator.shutdown()
        }
    }

    static func serviceAccount(tokenURI: String) throws -> [UInt8] {
        Array(
            try JSONSerialization.data(withJSONObject: [
                "type": "service_account", "project_id": "switchboard-test", "private_key_id": "k1",
                "private_key": try key.pkcs8PEM(),
                "client_email": "push@switchboard-test.iam.gserviceaccount.com", "token_uri": tokenURI,
            ]))
    }

    static func rig(account accountKey: RS256PrivateKey = key) async throws -> Rig {
        var configuration = APNsEmulatorConfiguration(port: 0)
        configuration.fcmAccount = FCMEmulatorAccount(
            projectID: "switchboard-test", clientEmail: "push@switchboard-test.iam.gserviceaccount.com",
            publicKey: accountKey.publicKey)
        let emulator = APNsEmulator(configuration: configuration)
        let address = try emulator.start()
        let base = "http://127.0.0.1:\(address.port)"
        let account = try FCMServiceAccount(json: try serviceAccount(tokenURI: base + "/token"))
        let transport = try FCMTransport(
            account: account, baseURL: base, caFile: nil, connections: 1, requestTimeout: .seconds(10))
        return Rig(emulator: emulator, transport: transport, base: base)
    }

    static func job(_ token: String, id: String = UUID().uuidString.lowercased()) throws -> PushJob {
        let data = try FCMMessage.ringData(
            callID: "call-1", scopeKind: "conversation", scopeID: "conv-1", mode: "audio", callerName: "Ada",
            groupName: nil,
            expiresAt: Date().addingTimeInterval(30), now: Date())
        return PushJob(
            id: id, callID: "call-1", userID: "u1", channel: "fcm", token: token, environment: "", payload: data,
            headers: [], attempts: 0,
            expiresAt: Date().addingTimeInterval(30))
    }

    @Test func aRingReachesTheTokensInboxWithOneAccessTokenForManySends() async throws {
        let rig = try await Self.rig()
        let token = "fcm-Token:APA91b_live-1"
        let started = Date()
        for _ in 0..<5 {
            #expect(await rig.transport.send(try Self.job(token)) == .response(status: 200, reason: nil))
        }
        #expect(
            rig.transport.tokenFetches == 1 && rig.emulator.fcmAccessTokensIssued == 1, "the access token is cached")
        let inbox = rig.emulator.fcmInbox(token: token)
        #expect(inbox.count == 5)
        let first = try #require(inbox.first)
        let object = try JSONSerialization.jsonObject(with: Data(first.payload)) as? [String: Any]
        let message = try #require(object?["message"] as? [String: Any])
        #expect(message["token"] as? String == token)
        #expect((message["data"] as? [String: Any])?["type"] as? String == "call")
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == "HIGH" && android["collapse_key"] as? String == "call_call-1")
        let ttl = try #require((android["ttl"] as? String).flatMap { Int($0.dropLast()) })
        // What is left of the 30 s window when it was sent (however long a busy machine took to get there).
        let taken = Int(Date().timeIntervalSince(started).rounded(.up))
        #expect((max(0, 30 - taken - 1)...30).contains(ttl), "what is left of the ring window: \(ttl) s")
        #expect(rig.emulator.fcmInbox(token: token.lowercased()).isEmpty, "FCM tokens are case-sensitive")
        await rig.stop()
    }

    @Test func answersCarryTheirFCMCodeAndRetryAfterAndARejectedAccessTokenIsReplaced() async throws {
        let rig = try await Self.rig()
        var settings = HTTP2ClientConfiguration(baseURL: rig.base)
        settings.priorKnowledge = true
        let control = try HTTP2Client(configuration: settings)
        let script =
            #"{"faults":[{"token":"gone","error":"UNREGISTERED"},{"token":"busy","error":"QUOTA_EXCEEDED","retryAfter":7},{"token":"stale","error":"UNAUTHENTICATED"}]}"#
        let added = try await control.send(
            HTTP2Request(
                method: "POST", path: "/fcm/control/faults", headers: [("content-type", "application/json")],
                body: Array(script.utf8)))
        await control.shutdown()
        #expect(added.status == 204)
        #expect(await rig.transport.send(try Self.job("gone")) == .response(status: 404, reason: "UNREGISTERED"))
        #expect(
            await rig.transport.send(try Self.job("busy"))
                == .response(status: 429, reason: "QUOTA_EXCEEDED", retryAfter: 7))
        #expect(
            await rig.transport.send(try Self.job("bad token"))
                == .response(status: 400, reason: FCMError.invalidRegistrationToken))
        #expect(rig.transport.tokenFetches == 1)
        // FCM rejects the access token: the next request fetches a new one, and later ones reuse it.
        #expect(await rig.transport.send(try Self.job("stale")) == .response(status: 401, reason: "UNAUTHENTICATED"))
        #expect(await rig.transport.send(try Self.job("fine")) == .response(status: 200, reason: nil))
        #expect(await rig.transport.send(try Self.job("fine")) == .response(status: 200, reason: nil))
        #expect(
            rig.transport.tokenFetches == 2 && rig.emulator.fcmAccessTokensIssued == 2,
            "one refresh after the rejection")
        let channel = FCMChannel(transport: rig.transport)
        #expect(
            channel.verdict(for: .response(status: 429, reason: "QUOTA_EXCEEDED", retryAfter: 90))
                == PushVerdict(action: .retry, reason: "QUOTA_EXCEEDED", retryAfter: 90))
        #expect(channel.verdict(for: .response(status: 404, reason: "UNREGISTERED")).action == .deleteToken)
        await rig.stop()
    }

    /// Five minutes before the token expires a new one is fetched beside the sends, which keep
    /// going out with the current one meanwhile.
    @Test func aTokenDueForReplacementIsReplacedBesideTheSends() async throws {
        let offset = Mutex<TimeInterval>(0)
        var configuration = APNsEmulatorConfiguration(port: 0)
        configuration.fcmAccount = FCMEmulatorAccount(
            projectID: "switchboard-test", clientEmail: "push@switchboard-test.iam.gserviceaccount.com",
            publicKey: Self.key.publicKey)
        configuration.fcmAccessTokenSeconds = 330  // 5 min 30 s
        let emulator = APNsEmulator(configuration: configuration)
        let base = "http://127.0.0.1:\(try emulator.start().port)"
        let account = try FCMServiceAccount(json: try Self.serviceAccount(tokenURI: base + "/token"))
        let transport = try FCMTransport(
            account: account, baseURL: base, caFile: nil, connections: 1, requestTimeout: .seconds(10),
            now: { Date().addingTimeInterval(offset.withLock { $0 }) })
        #expect(await transport.send(try Self.job("a")) == .response(status: 200, reason: nil))
        #expect(transport.tokenFetches == 1)
        offset.withLock { $0 = 40 }  // inside the token's last five minutes (and within the assertion's 60 s of slack)
        #expect(await transport.send(try Self.job("a")) == .response(status: 200, reason: nil))
        #expect(
            await eventually { transport.tokenFetches == 2 && emulator.fcmAccessTokensIssued == 2 },
            "refreshed in the background")
        #expect(await transport.send(try Self.job("a")) == .response(status: 200, reason: nil))
        #expect(transport.tokenFetches == 2, "the new token is used from then on")
        await transport.shutdown()
        await emulator.shutdown()
    }

    @Test func aServiceAccountWhoseKeyTheStandInDoesNotKnowGetsNoToken() async throws {
        let rig = try await Self.rig(account: try RS256PrivateKey.generate())
        let result = await rig.transport.send(try Self.job("t"))
        await rig.stop()
        guard case .transportFailure(let message) = result else {
            Issue.record("a refused assertion is a failure to retry, with its reason: \(result)")
            return
        }
        #expect(message.contains("Invalid JWT Signature"))
    }
}

/// The Huawei channel's transport against the emulator's Huawei stand-in.
@Suite("Huawei transport against the emulator", .serialized, .timeLimit(.minutes(2)))
struct HuaweiLiveTests {
    static func rig(secret: String = "s3cret") async throws -> (APNsEmulator, HuaweiTransport) {
        var configuration = APNsEmulatorConfiguration(port: 0)
        configuration.huaweiApp = HuaweiEmulatorApp(appID: "104857600", appSecret: "s3cret")
        let emulator = APNsEmulator(configuration: configuration)
        let base = "http://127.0.0.1:\(try emulator.start().port)"
        let transport = try HuaweiTransport(
            appID: "104857600", appSecret: secret, baseURL: base, tokenURL: base + "/oauth2/v3/token", caFile: nil,
            connections: 1,
            requestTimeout: .seconds(10))
        return (emulator, transport)
    }

    static func job(_ token: String) throws -> PushJob {
        PushJob(
            id: UUID().uuidString.lowercased(), callID: "call-9", userID: "u", channel: "huawei", token: token,
            environment: "",
            payload: Array(#"{"callId":"call-9","type":"call"}"#.utf8), headers: [], attempts: 0,
            expiresAt: Date().addingTimeInterval(30))
    }

    @Test func ringsArriveAndTheResultCodesComeBack() async throws {
        let (emulator, transport) = try await Self.rig()
        let token = "IQAAAACy0kYkAABq-Huawei_Token"
        #expect(await transport.send(try Self.job(token)) == .response(status: 200, reason: "80000000"))
        #expect(await transport.send(try Self.job(token)) == .response(status: 200, reason: "80000000"))
        #expect(transport.tokenFetches == 1, "the access token is shared")
        let inbox = emulator.huaweiInbox(token: token)
        #expect(inbox.count == 2)
        let first = try #require(inbox.first)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(first.payload)) as? [String: Any])
        let message = try #require(body["message"] as? [String: Any])
        #expect(message["data"] as? String == #"{"callId":"call-9","type":"call"}"#)
        // The HTTP side of the stand-in: a scripted code, and the inbox as a phone reads it.
        var settings = HTTP2ClientConfiguration(baseURL: "http://127.0.0.1:\(try #require(emulator.address).port)")
        settings.priorKnowledge = true
        let control = try HTTP2Client(configuration: settings)
        let scripted = try await control.send(
            HTTP2Request(
                method: "POST", path: "/huawei/control/faults", headers: [("content-type", "application/json")],
                body: Array(#"{"token":"busy","codes":["80100003"]}"#.utf8)))
        #expect(scripted.status == 204)
        let read = try await control.send(
            HTTP2Request(method: "GET", path: "/huawei/inbox/\(token)?after=0", headers: [], body: []))
        #expect(
            ((try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])?["messages"] as? [Any])?.count
                == 2)
        await control.shutdown()
        #expect(await transport.send(try Self.job("busy")) == .response(status: 200, reason: "80100003"))
        emulator.addHuaweiCodes(["80300007"], token: "dead")
        let dead = await transport.send(try Self.job("dead"))
        #expect(dead == .response(status: 200, reason: "80300007"))
        #expect(HuaweiChannel(transport: transport).verdict(for: dead).action == .deleteToken)
        await transport.shutdown()
        await emulator.shutdown()
    }

    @Test func aWrongSecretGetsNoAccessToken() async throws {
        let (emulator, transport) = try await Self.rig(secret: "wrong")
        let result = await transport.send(try Self.job("t"))
        await transport.shutdown()
        await emulator.shutdown()
        guard case .transportFailure(let message) = result else {
            Issue.record("refused client credentials are a failure to retry, with the reason: \(result)")
            return
        }
        #expect(message.contains("client_id or client_secret is wrong"))
    }
}
