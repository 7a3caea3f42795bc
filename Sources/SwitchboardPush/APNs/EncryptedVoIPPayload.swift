import Foundation
import SwitchboardCrypto
import SwitchboardPushCore

/// The encrypted VoIP payload of SPEC §3: `{"aps":{}, "v":1, "enc":"AES256-GCM", "kid",
/// "nonce", "ct", "tag"}`. `ct` is the ordinary payload (``VoIPPush``) encrypted with
/// AES-256-GCM under the device's key, with a random 96-bit nonce and the key id as
/// additional data; `nonce`, `ct` and `tag` are base64 (standard alphabet, padded). Nothing
/// about the caller or the call is left in the clear.
public enum EncryptedVoIPPayload {
    public static let version = 1
    public static let algorithm = "AES256-GCM"

    /// Encrypts `payload` (the ordinary VoIP payload's JSON) for the device holding `key`.
    public static func seal(_ payload: [UInt8], key: PayloadKey) throws -> [UInt8] {
        let box = try AESGCM.seal(payload, key: key.bytes, authenticating: Array(key.id.utf8))
        let object: [String: Any] = [
            "aps": [String: Any](), "v": version, "enc": algorithm, "kid": key.id,
            "nonce": Data(box.nonce).base64EncodedString(), "ct": Data(box.ciphertext).base64EncodedString(),
            "tag": Data(box.tag).base64EncodedString(),
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        guard data.count <= VoIPPush.maxPayloadBytes else { throw VoIPPush.Problem.payloadTooLarge(data.count) }
        return Array(data)
    }

    /// The ordinary payload inside an encrypted one; nil when `payload` is not one of ours, the
    /// key id differs, or the tag does not match (the tests' and the emulator's reader; the
    /// SDK has its own).
    public static func open(_ payload: [UInt8], key: PayloadKey) -> [UInt8]? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any],
            object["v"] as? Int == version, object["enc"] as? String == algorithm, object["kid"] as? String == key.id,
            let nonce = (object["nonce"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let ciphertext = (object["ct"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let tag = (object["tag"] as? String).flatMap({ Data(base64Encoded: $0) })
        else { return nil }
        let box = AESGCM.SealedBox(nonce: Array(nonce), ciphertext: Array(ciphertext), tag: Array(tag))
        return try? AESGCM.open(box, key: key.bytes, authenticating: Array(key.id.utf8))
    }
}
