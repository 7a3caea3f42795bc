import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardPushCore

private let voipToken = String(repeating: "ab", count: 32)
private let secret = Data(SecureRandom.bytes(32)).base64EncodedString()

/// Encrypted VoIP payloads (SPEC §3): a device registers a 256-bit key, its VoIP pushes carry
/// only the encrypted envelope, and the store keeps the key sealed under `dataEncryptionKey`.
@Suite("Encrypted VoIP payloads: device keys and sealed pushes", .serialized, .timeLimit(.minutes(3)))
struct PayloadKeyTests {
    private struct World {
        let world: CallWorld
        let provider = ScriptedPushProvider()
        var app: TestApplication { world.app }

        init(secret: String) throws {
            var configuration = ServerConfiguration()
            configuration.push.apns.bundleID = "com.example.phone"
            configuration.dataEncryptionKey = secret
            world = try CallWorld(configuration: configuration, apnsTransport: provider)
        }

        func register(
            _ person: CallWorld.Person, device: String = UUID().uuidString, key: PayloadKey?
        ) async -> HTTPResponse {
            let keyField =
                key.map { #","payloadKey":{"id":"\#($0.id)","key":"\#(Data($0.bytes).base64EncodedString())"}"# } ?? ""
            return await app.request(
                "POST", "/voip/devices", headers: person.headers,
                body: #"{"deviceId":"\#(device)","pushToken":"\#(voipToken)","environment":"production"\#(keyField)}"#)
        }

        func jobs() async throws -> [(state: String, reason: String?)] {
            try await app.application.store.read { connection in
                try connection.query("SELECT state, reason FROM push_jobs ORDER BY created_at_ms, id", []).map {
                    (try $0.string("state"), try $0.optionalString("reason"))
                }
            }
        }

        /// Every text the push tables hold, as a dump would show it.
        func dump() async throws -> String {
            try await app.application.store.read { connection in
                var text = ""
                for table in ["push_devices", "push_jobs", "gateway_devices"] {
                    for row in try connection.query("SELECT * FROM \(table)", []) { text += "\(row)\n" }
                }
                return text
            }
        }
    }

    private static func error(_ response: HTTPResponse) -> (code: String?, field: String?) {
        let error = response.json?["error"] as? [String: Any]
        return (error?["code"] as? String, error?["field"] as? String)
    }

    @Test func aDevicesVoIPPushCarriesOnlyTheEnvelopeAndItOpensToTheOrdinaryPayload() async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        let key = PayloadKey(id: "bob-phone.1", bytes: SecureRandom.bytes(32))
        let registered = await env.register(bob, key: key)
        #expect(registered.status == 200)
        #expect(registered.json?["payloadKeyId"] as? String == key.id)
        #expect(!registered.text.contains(Data(key.bytes).base64EncodedString()), "the key is never echoed")
        let call = try #require(await env.world.call(alice, "conversation", conversation, mode: "video").call)
        #expect(try await eventuallyTrying { try await env.jobs().map(\.state) == ["delivered"] })
        let sent = try #require(env.provider.sent.first)
        let envelope = try #require(try JSONSerialization.jsonObject(with: Data(sent.payload)) as? [String: Any])
        #expect(Set(envelope.keys) == ["aps", "v", "enc", "kid", "nonce", "ct", "tag"])
        #expect(
            envelope["v"] as? Int == 1 && envelope["enc"] as? String == "AES256-GCM"
                && envelope["kid"] as? String == key.id)
        #expect((envelope["aps"] as? [String: Any])?.isEmpty == true)
        #expect(Data(base64Encoded: envelope["nonce"] as? String ?? "")?.count == 12)
        #expect(Data(base64Encoded: envelope["tag"] as? String ?? "")?.count == 16)
        let text = String(decoding: sent.payload, as: UTF8.self)
        #expect(!text.contains(call.id) && !text.contains("alice"), "nothing about the call in the clear")
        // The headers stay those of any VoIP push.
        let headers = Dictionary(uniqueKeysWithValues: sent.headers)
        #expect(
            headers["apns-push-type"] == "voip" && headers["apns-priority"] == "10" && headers["apns-id"] == sent.id)
        let inner = try #require(EncryptedVoIPPayload.open(sent.payload, key: key))
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(inner)) as? [String: Any])
        #expect(
            payload["callId"] as? String == call.id && payload["callerName"] as? String == "alice"
                && payload["mode"] as? String == "video")
        #expect(payload["scopeKind"] as? String == "conversation" && payload["aps"] != nil)
        // Another key, or the key id changed in the envelope (the additional data), opens nothing.
        #expect(
            EncryptedVoIPPayload.open(sent.payload, key: PayloadKey(id: key.id, bytes: SecureRandom.bytes(32))) == nil)
        let relabelled = text.replacingOccurrences(of: #""kid":"\#(key.id)""#, with: #""kid":"other""#)
        #expect(
            EncryptedVoIPPayload.open(Array(relabelled.utf8), key: PayloadKey(id: "other", bytes: key.bytes)) == nil)
    }

    @Test func theStoreKeepsTheKeySealedUnderTheConfiguredSecret() async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let bob = try await env.world.person("bob")
        let key = PayloadKey(id: "k1", bytes: SecureRandom.bytes(32))
        let device = UUID().uuidString.lowercased()
        #expect(await env.register(bob, device: device, key: key).status == 200)
        let dump = try await env.dump()
        #expect(dump.contains("k1"))
        for spelling in [
            Data(key.bytes).base64EncodedString(), Base64URL.encode(key.bytes),
            key.bytes.map { String(format: "%02x", $0) }.joined(),
        ] {
            #expect(!dump.contains(spelling), "the key's bytes are not in the store")
        }
        let sealed: String? = try await env.app.application.store.read { connection in
            try connection.query("SELECT payload_key_sealed FROM push_devices WHERE device_id = ?", [.text(device)])
                .first?.string("payload_key_sealed")
        }
        let sealedText = try #require(sealed)
        let stored = StoredPayloadKey(id: "k1", sealed: sealedText)
        let vault = PayloadKeyVault(secret: Array(try #require(Data(base64Encoded: secret))))
        #expect(vault.open(stored, owner: PayloadKeyVault.owner(device: device)) == key)
        // Another secret, another device's row, or another key id opens nothing.
        #expect(
            PayloadKeyVault(secret: SecureRandom.bytes(32)).open(stored, owner: PayloadKeyVault.owner(device: device))
                == nil)
        #expect(vault.open(stored, owner: PayloadKeyVault.owner(device: UUID().uuidString.lowercased())) == nil)
        #expect(
            vault.open(StoredPayloadKey(id: "k2", sealed: stored.sealed), owner: PayloadKeyVault.owner(device: device))
                == nil)
        #expect(PayloadKeyVault(secret: nil).open(stored, owner: PayloadKeyVault.owner(device: device)) == nil)
    }

    @Test func aRegistrationWithoutAKeyGoesBackToPlainPushesAndAnUnreadableKeyFailsTheRing() async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        let device = UUID().uuidString.lowercased()
        #expect(
            await env.register(bob, device: device, key: PayloadKey(id: "k1", bytes: SecureRandom.bytes(32))).status
                == 200)
        let plain = await env.register(bob, device: device, key: nil)
        #expect(plain.status == 200 && plain.json?["payloadKeyId"] == nil)
        let first = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.jobs().map(\.state) == ["delivered"] })
        let plainPush = try #require(env.provider.sent.first)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(plainPush.payload)) as? [String: Any])
        #expect(payload["callId"] as? String == first.id && payload["enc"] == nil)
        #expect(await env.world.act("cancel", first.id, by: alice).status == 200)
        // A sealed key this server cannot open (another secret wrote it): the ring fails with a
        // reason rather than going out in the clear.
        #expect(
            await env.register(bob, device: device, key: PayloadKey(id: "k2", bytes: SecureRandom.bytes(32))).status
                == 200)
        let foreign = try PayloadKeyVault(secret: SecureRandom.bytes(32))
            .seal(PayloadKey(id: "k2", bytes: SecureRandom.bytes(32)), owner: PayloadKeyVault.owner(device: device))
        _ = try await env.app.application.store.write { transaction in
            try transaction.connection.run(
                "UPDATE push_devices SET payload_key_sealed = ? WHERE device_id = ?",
                [.text(foreign.sealed), .text(device)])
        }
        _ = try #require(await env.world.call(alice, "conversation", conversation, clientID: UUID().uuidString).call)
        #expect(try await eventuallyTrying { try await env.jobs().count == 2 })
        let jobs = try await env.jobs()
        // (Both jobs were written at the same manual-clock moment: their order is the ids'.)
        #expect(jobs.filter { $0.state == "failed" && $0.reason == PayloadKeyVault.unreadableReason }.count == 1)
        #expect(jobs.filter { $0.state == "delivered" }.count == 1)
        #expect(env.provider.sent.count == 1, "nothing more was sent")
    }

    @Test func aPlainRingWaitingForItsRetryIsDroppedOnceTheDeviceHasAKey() async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        let device = UUID().uuidString.lowercased()
        #expect(await env.register(bob, device: device, key: nil).status == 200)
        env.provider.script(voipToken, [.response(status: 503, reason: "ServiceUnavailable")])
        _ = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { env.provider.sent.count == 1 })
        // The phone registers a key while the plain ring waits for its retry.
        #expect(
            await env.register(bob, device: device, key: PayloadKey(id: "k1", bytes: SecureRandom.bytes(32))).status
                == 200)
        env.world.clock.advance(seconds: 3)
        #expect(try await eventuallyTrying { try await env.jobs().first?.reason == "payload_key_changed" })
        #expect(try await env.jobs().first?.state == "dropped")
        #expect(env.provider.sent.count == 1, "the plain payload never went out again")
    }

    @Test func withoutASecretAPayloadKeyIsRefusedAndTheDeviceStaysUnregistered() async throws {
        let env = try World(secret: "")
        defer { env.world.close() }
        let bob = try await env.world.person("bob")
        let refused = await env.register(bob, key: PayloadKey(id: "k1", bytes: SecureRandom.bytes(32)))
        #expect(refused.status == 409 && Self.error(refused).code == "DATA_ENCRYPTION_DISABLED")
        let count = try await env.app.application.store.read {
            try $0.query("SELECT count(*) AS n FROM push_devices", []).first?.int("n")
        }
        #expect(count == 0)
        #expect(await env.register(bob, key: nil).status == 200)
    }

    @Test(arguments: [
        (#""payloadKey":{"id":"k1","key":"\#(Data(count: 16).base64EncodedString())"}"#, "payloadKey.key"),
        (#""payloadKey":{"id":"k1","key":"not base64!"}"#, "payloadKey.key"),
        (#""payloadKey":{"id":"","key":"\#(Data(count: 32).base64EncodedString())"}"#, "payloadKey.id"),
        (#""payloadKey":{"id":"has space","key":"\#(Data(count: 32).base64EncodedString())"}"#, "payloadKey.id"),
        (
            #""payloadKey":{"id":"\#(String(repeating: "k", count: 65))","key":"\#(Data(count: 32).base64EncodedString())"}"#,
            "payloadKey.id"
        ),
    ])
    func badKeysAre400NamingTheField(field: String, expected: String) async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let bob = try await env.world.person("bob")
        let response = await env.app.request(
            "POST", "/voip/devices", headers: bob.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(voipToken)","environment":"production",\#(field)}"#
        )
        #expect(
            response.status == 400 && Self.error(response).code == "VALIDATION_FAILED"
                && Self.error(response).field == expected)
    }

    @Test func onPushDevicesAKeyBelongsToTheVoIPTokenOnly() async throws {
        let env = try World(secret: secret)
        defer { env.world.close() }
        let bob = try await env.world.person("bob")
        let key = #"{"id":"k1","key":"\#(Data(SecureRandom.bytes(32)).base64EncodedString())"}"#
        let wrong = await env.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: #"""
                {"deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-alert":{"token":"\#(voipToken)","environment":"sandbox","payloadKey":\#(key)}}}
                """#)
        #expect(wrong.status == 400 && Self.error(wrong).field == "tokens.ios-alert.payloadKey")
        let right = await env.app.request(
            "POST", "/push/devices", headers: bob.headers,
            body: #"""
                {"deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(voipToken)","environment":"sandbox","payloadKey":\#(key)}}}
                """#)
        #expect(right.status == 200)
        let tokens = try #require(right.json?["tokens"] as? [[String: Any]])
        #expect(tokens.first?["payloadKeyId"] as? String == "k1")
    }

    @Test func aGatewayDevicesRingIsEncryptedToo() async throws {
        let env = try await GatewaySignalTests.World(dataEncryptionKey: secret)
        defer { env.world.close() }
        let key = PayloadKey(id: "gw-key", bytes: SecureRandom.bytes(32))
        let phone = UUID().uuidString
        try await env.device(
            "u-bob", phone, platform: "ios",
            tokens: #"""
                {"ios-voip":{"token":"\#(voipToken)","environment":"production","payloadKey":{"id":"gw-key","key":"\#(Data(key.bytes).base64EncodedString())"}}}
                """#)
        _ = try await env.signal("call-77", to: ["u-bob"])
        #expect(try await eventuallyTrying { !env.apns.sent.isEmpty })
        let sent = try #require(env.apns.sent.first)
        let inner = try #require(EncryptedVoIPPayload.open(sent.payload, key: key))
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(inner)) as? [String: Any])
        #expect(payload["callId"] as? String == "call-77" && payload["callerName"] as? String == "Caller")
        #expect(!String(decoding: sent.payload, as: UTF8.self).contains("call-77"))
    }
}
