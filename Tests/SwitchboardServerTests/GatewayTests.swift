import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer

@Suite("The push gateway: apps, keys and signed requests", .serialized, .timeLimit(.minutes(3)))
struct GatewayTests {
    static let adminKey = "admin-key-0123456789"
    static var admin: HTTPHeaders {
        ["Host": "test", "Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
    }

    @Test func theCanonicalFormAndTheClockWindow() {
        let bytes = GatewaySignature.canonical(
            app: "acme", key: "k1", method: "post", target: "/gateway/v1/signals?x=1", timestamp: "1800000000",
            body: Array("{}".utf8))
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "switchboard-gateway-v2\nacme\nk1\nPOST\n/gateway/v1/signals?x=1\n1800000000\n{}")
        let v1 = GatewaySignature.canonicalV1(
            method: "post", target: "/gateway/v1/signals?x=1", timestamp: "1800000000", body: Array("{}".utf8))
        #expect(
            String(decoding: v1, as: UTF8.self)
                == "switchboard-gateway-v1\nPOST\n/gateway/v1/signals?x=1\n1800000000\n{}")
        #expect(GatewaySignature.seconds("1800000000") == 1_800_000_000)
        for bad in ["", "-5", "1.5", "18e8", " 1", "1234567890123"] {
            #expect(GatewaySignature.seconds(bad) == nil, "\(bad)")
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000.4)
        #expect(
            GatewaySignature.isFresh(1_800_000_000 - 60, now: now)
                && GatewaySignature.isFresh(1_800_000_000 + 60, now: now))
        #expect(
            !GatewaySignature.isFresh(1_800_000_000 - 61, now: now)
                && !GatewaySignature.isFresh(1_800_000_000 + 61, now: now))
    }

    /// The OpenAPI document's worked example, its signature made by Python's `cryptography`.
    @Test func theDocumentsWorkedExampleSignsAlike() throws {
        let hex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
        let seed = stride(from: 0, to: hex.count, by: 2).map { offset in
            UInt8(hex.dropFirst(offset).prefix(2), radix: 16)!
        }
        let key = try Ed25519PrivateKey(seed: seed)
        let message = GatewaySignature.canonical(
            app: "acme", key: "k1", method: "GET", target: "/gateway/v1/app", timestamp: "1800000000", body: [])
        #expect(message.count == 62)
        #expect(Base64URL.encode(key.publicKey.rawBytes) == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
        #expect(
            Base64URL.encode(try key.sign(message))
                == "XlKuKqGpyFJ15yuR7ZDsmnRRgSU-zvpe-7WcBEbsovffOAfFfc4omdMcnTXtmGyvE5dsakDplpB65UVKGJAzAw")
    }

    struct World {
        let world: CallWorld
        let key = try! Ed25519PrivateKey.generate()

        init() throws {
            var configuration = ServerConfiguration()
            configuration.adminKey = GatewayTests.adminKey
            world = try CallWorld(configuration: configuration)
        }

        var now: Int64 { Int64(world.clock.now.timeIntervalSince1970) }

        func registerApp(_ id: String = "acme", keyID: String = "k1") async -> HTTPResponse {
            await world.app.request(
                "POST", "/admin/gateway/apps", headers: GatewayTests.admin,
                body: """
                    {"id":"\(id)","name":"Acme Chat","keys":[{"keyId":"\(keyID)","publicKey":"\(Base64URL.encode(key.publicKey.rawBytes))"}]}
                    """)
        }

        /// The headers of `method target` signed by `signer` at `timestamp`.
        func signed(
            _ method: String, _ target: String, body: String = "", app: String = "acme", keyID: String = "k1",
            signer: Ed25519PrivateKey? = nil,
            timestamp: Int64? = nil
        ) throws -> HTTPHeaders {
            let stamp = String(timestamp ?? now)
            let signature = try (signer ?? key).sign(
                GatewaySignature.canonical(
                    app: app, key: keyID, method: method, target: target, timestamp: stamp, body: Array(body.utf8)))
            return [
                "Host": "test", "Switchboard-App": app, "Switchboard-Key": keyID, "Switchboard-Timestamp": stamp,
                "Switchboard-Signature": Base64URL.encode(signature), "Switchboard-Signature-Version": "2",
            ]
        }

        func code(_ response: HTTPResponse) -> String? {
            ((try? JSONSerialization.jsonObject(with: Data(response.bodyBytes)) as? [String: Any])?["error"]
                as? [String: Any])?["code"] as? String
        }
    }

    @Test func appsAndKeysAreRegisteredAndRotatedWithTheAdminKey() async throws {
        let env = try World()
        defer { env.world.close() }
        #expect(await env.registerApp().status == 201)
        #expect(env.code(await env.registerApp()) == "GATEWAY_APP_EXISTS")
        let bad = await env.world.app.request(
            "POST", "/admin/gateway/apps", headers: Self.admin,
            body: #"{"id":"x","name":"X","keys":[{"keyId":"k","publicKey":"AAAA"}]}"#)
        #expect(bad.status == 400 && env.code(bad) == "VALIDATION_FAILED")
        let spaced = await env.world.app.request(
            "POST", "/admin/gateway/apps", headers: Self.admin, body: #"{"id":"Not OK","name":"X","keys":[]}"#)
        #expect(spaced.status == 400)
        let anonymous = await env.world.app.request("GET", "/admin/gateway/apps/acme")
        #expect(anonymous.status == 401)
        let shown = await env.world.app.request("GET", "/admin/gateway/apps/acme", headers: Self.admin)
        let app = try #require(try JSONSerialization.jsonObject(with: Data(shown.bodyBytes)) as? [String: Any])
        #expect(
            app["name"] as? String == "Acme Chat"
                && (app["keys"] as? [[String: Any]])?.first?["keyId"] as? String == "k1")
        #expect(await env.world.app.request("GET", "/admin/gateway/apps/none", headers: Self.admin).status == 404)

        // Rotation: a second key signs at once; the first, once removed, signs nothing.
        let next = try Ed25519PrivateKey.generate()
        // Standard base64 (with padding) is taken too, and stored as base64url.
        let standard = Data(next.publicKey.rawBytes).base64EncodedString()
        let added = await env.world.app.request(
            "POST", "/admin/gateway/apps/acme/keys", headers: Self.admin,
            body: #"{"keyId":"k2","publicKey":"\#(standard)"}"#)
        #expect(added.status == 201)
        #expect(
            env.code(
                await env.world.app.request(
                    "POST", "/admin/gateway/apps/acme/keys", headers: Self.admin,
                    body: #"{"keyId":"k2","publicKey":"\#(standard)"}"#)) == "GATEWAY_KEY_EXISTS")
        #expect(
            await env.world.app.request(
                "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", keyID: "k2", signer: next)
            ).status == 200)
        #expect(
            await env.world.app.request("DELETE", "/admin/gateway/apps/acme/keys/k1", headers: Self.admin).status == 204
        )
        #expect(
            await env.world.app.request("DELETE", "/admin/gateway/apps/acme/keys/k1", headers: Self.admin).status == 404
        )
        let old = await env.world.app.request(
            "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app"))
        #expect(old.status == 401 && env.code(old) == "GATEWAY_UNKNOWN_KEY")
    }

    @Test func aSignedRequestIsTakenOnceAndEveryFlawIsRefusedWithItsCode() async throws {
        let env = try World()
        defer { env.world.close() }
        #expect(await env.registerApp().status == 201)
        let headers = try env.signed("GET", "/gateway/v1/app")
        let first = await env.world.app.request("GET", "/gateway/v1/app", headers: headers)
        #expect(first.status == 200)
        let caller = try #require(try JSONSerialization.jsonObject(with: Data(first.bodyBytes)) as? [String: String])
        #expect(caller == ["appId": "acme", "name": "Acme Chat", "keyId": "k1"])
        #expect(
            env.code(await env.world.app.request("GET", "/gateway/v1/app", headers: headers)) == "GATEWAY_REPLAYED",
            "the same request again")

        // The clock: 60 s either way is taken, 61 s is not.
        for (skew, expected) in [(-60, 200), (60, 200), (-61, 401), (61, 401)] as [(Int64, Int)] {
            let answer = await env.world.app.request(
                "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", timestamp: env.now + skew))
            #expect(answer.status == expected, "skew \(skew) s")
            if expected == 401 { #expect(env.code(answer) == "GATEWAY_STALE_TIMESTAMP") }
        }
        // A replay just outside the window is refused too: its timestamp is stale by then. (A
        // second later: the same request in the same second is the same signature, a replay.)
        env.world.clock.advance(seconds: 1)
        let late = try env.signed("GET", "/gateway/v1/app")
        #expect(await env.world.app.request("GET", "/gateway/v1/app", headers: late).status == 200)
        env.world.clock.advance(seconds: 61)
        #expect(
            env.code(await env.world.app.request("GET", "/gateway/v1/app", headers: late)) == "GATEWAY_STALE_TIMESTAMP")

        var unsigned = try env.signed("GET", "/gateway/v1/app")
        unsigned.remove("Switchboard-Signature")
        #expect(
            env.code(await env.world.app.request("GET", "/gateway/v1/app", headers: unsigned)) == "GATEWAY_UNSIGNED")
        #expect(
            env.code(
                await env.world.app.request(
                    "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", app: "other")))
                == "GATEWAY_UNKNOWN_KEY")
        #expect(
            env.code(
                await env.world.app.request(
                    "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", keyID: "k9")))
                == "GATEWAY_UNKNOWN_KEY")
        let stranger = try Ed25519PrivateKey.generate()
        #expect(
            env.code(
                await env.world.app.request(
                    "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", signer: stranger)))
                == "GATEWAY_BAD_SIGNATURE")
        // Signed for another target or method: the signature covers both.
        #expect(
            env.code(
                await env.world.app.request(
                    "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app?x=1")))
                == "GATEWAY_BAD_SIGNATURE")
        #expect(
            env.code(
                await env.world.app.request(
                    "GET", "/gateway/v1/app", headers: try env.signed("POST", "/gateway/v1/app")))
                == "GATEWAY_BAD_SIGNATURE")
        var garbled = try env.signed("GET", "/gateway/v1/app")
        garbled.remove("Switchboard-Signature")
        garbled.add("Switchboard-Signature", "not-base64!")
        #expect(
            env.code(await env.world.app.request("GET", "/gateway/v1/app", headers: garbled)) == "GATEWAY_BAD_SIGNATURE"
        )
        let big = String(repeating: "x", count: GatewaySignature.maxBodyBytes + 1)
        let tooLarge = await env.world.app.request(
            "GET", "/gateway/v1/app", headers: try env.signed("GET", "/gateway/v1/app", body: big), body: big)
        #expect(tooLarge.status == 413 && env.code(tooLarge) == "GATEWAY_BODY_TOO_LARGE")
    }
}
