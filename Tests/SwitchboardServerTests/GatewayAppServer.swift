import Foundation
import Synchronization
import Testing
import SwitchboardCrypto
@testable import SwitchboardServer

/// An app server registered with the push gateway under one Ed25519 key, signing its requests
/// (signature version 2) to a live server. Each request's target gets a counter, so no two
/// signatures repeat (the replay cache would refuse the second).
final class GatewayAppServer: Sendable {
    let address: String
    let app: String
    let key: Ed25519PrivateKey
    private let sent = Mutex(0)

    /// Registers app `app` with the admin key; the registration must succeed.
    init(registeringOn address: String, adminKey: String, app: String = "acme") async throws {
        self.address = address
        self.app = app
        key = try Ed25519PrivateKey.generate()
        let answer = await fetch(
            address, "POST", "/admin/gateway/apps",
            body: """
                {"id":"\(app)","name":"Acme","keys":[{"keyId":"k1","publicKey":"\(Base64URL.encode(key.publicKey.rawBytes))"}]}
                """, headers: ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"])
        try #require(answer.status == 201, "\(answer.body)")
    }

    /// A signed gateway request.
    func signed(
        _ method: String, _ path: String, _ body: String = ""
    ) async throws -> (
        status: Int, headers: String, body: String
    ) {
        let n = sent.withLock { count -> Int in
            count += 1
            return count
        }
        let target = path + (path.contains("?") ? "&" : "?") + "n=\(n)"
        let stamp = String(Int64(Date().timeIntervalSince1970))
        let signature = try key.sign(
            GatewaySignature.canonical(
                app: app, key: "k1", method: method, target: target, timestamp: stamp, body: Array(body.utf8)))
        return await fetch(
            address, method, target, body: body.isEmpty ? nil : body,
            headers: [
                "Content-Type": "application/json", "Switchboard-App": app, "Switchboard-Key": "k1",
                "Switchboard-Timestamp": stamp, "Switchboard-Signature-Version": "2",
                "Switchboard-Signature": Base64URL.encode(signature),
            ])
    }
}
