import Foundation

/// Opens a device's encrypted VoIP payloads: AES-256-GCM under the payload key the device
/// registered (SPEC §3), the key id's UTF-8 bytes as additional data. The app injects it into
/// the `CallCoordinator`; on iOS `CryptoKitVoIPPayloadDecryptor` (SwitchboardCallKit) is one.
/// It runs inside PushKit's handler, before the report: keep it synchronous and quick.
public protocol VoIPPayloadDecrypting: Sendable {
    /// The plaintext, or nil when the key id is not one this device holds or the tag does
    /// not match.
    func open(keyID: String, nonce: Data, ciphertext: Data, tag: Data) -> Data?
}

/// The encrypted form of the VoIP payload: `{"aps":{}, "v":1, "enc":"AES256-GCM", "kid",
/// "nonce", "ct", "tag"}`, `nonce`, `ct` and `tag` as base64.
public enum EncryptedVoIPPush {
    /// Whether `payload` is the encrypted form (it names an algorithm or carries a ciphertext).
    public static func isEncrypted(_ payload: [AnyHashable: Any]) -> Bool {
        payload["enc"] != nil || payload["ct"] != nil
    }

    /// The ordinary payload inside `payload`; nil when it cannot be opened: no decryptor, an
    /// unknown version, algorithm or key, a malformed field, a changed byte, or an inside
    /// that is not a JSON object.
    public static func open(
        _ payload: [AnyHashable: Any], with decryptor: (any VoIPPayloadDecrypting)?
    ) -> [AnyHashable: Any]? {
        guard let decryptor, (payload["v"] as? NSNumber)?.intValue == 1 || payload["v"] as? Int == 1,
            payload["enc"] as? String == "AES256-GCM", let keyID = payload["kid"] as? String, !keyID.isEmpty,
            let nonce = (payload["nonce"] as? String).flatMap({ Data(base64Encoded: $0) }), nonce.count == 12,
            let ciphertext = (payload["ct"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let tag = (payload["tag"] as? String).flatMap({ Data(base64Encoded: $0) }), tag.count == 16,
            let plaintext = decryptor.open(keyID: keyID, nonce: nonce, ciphertext: ciphertext, tag: tag),
            let inner = (try? JSONSerialization.jsonObject(with: plaintext)) as? [String: Any]
        else { return nil }
        var opened: [AnyHashable: Any] = [:]
        for (key, value) in inner { opened[key] = value }
        return opened
    }
}
