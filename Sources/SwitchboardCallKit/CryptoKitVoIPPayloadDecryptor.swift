#if canImport(CryptoKit)
import CryptoKit
import Foundation
import SwitchboardKit
import SwitchboardWire

/// Opens this device's encrypted VoIP payloads with CryptoKit (AES-256-GCM, the key id as
/// additional data, SPEC §3). Give it to the `CallCoordinator` as its `payloadDecryptor`.
///
/// The app makes the key once, keeps its bytes in the keychain, and registers it with the
/// VoIP token (`VoIPPushReceiver(payloadKey:)`):
///
/// ```swift
/// let key = VoIPPayloadKey.generate(id: "phone-1")   // once; keep key.rawBytes in the keychain
/// let coordinator = CallCoordinator(..., payloadDecryptor: CryptoKitVoIPPayloadDecryptor(keys: [key]))
/// let receiver = VoIPPushReceiver(..., payloadKey: key.registration)
/// ```
public struct CryptoKitVoIPPayloadDecryptor: VoIPPayloadDecrypting {
    // The bytes, not `SymmetricKey`s: those are Sendable only in newer SDKs.
    private let keys: [String: Data]

    /// `keys`: the current key and, while a rotation settles, the one before it.
    public init(keys: [VoIPPayloadKey]) {
        var byID: [String: Data] = [:]
        for key in keys { byID[key.id] = key.rawBytes }
        self.keys = byID
    }

    public func open(keyID: String, nonce: Data, ciphertext: Data, tag: Data) -> Data? {
        guard let bytes = keys[keyID], let nonce = try? AES.GCM.Nonce(data: nonce),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
        else { return nil }
        return try? AES.GCM.open(box, using: SymmetricKey(data: bytes), authenticating: Data(keyID.utf8))
    }
}

/// A device's VoIP payload key: 256 random bits and the id its pushes name it by.
public struct VoIPPayloadKey: Sendable {
    public let id: String
    /// The 32 bytes, for the app's keychain.
    public let rawBytes: Data

    /// A new random key. `id`: 1 to 64 letters, digits, `.`, `_` or `-` (a new id for each
    /// new key, so pushes sealed under the old one are told apart).
    public static func generate(id: String) -> VoIPPayloadKey {
        let key = SymmetricKey(size: .bits256)
        return VoIPPayloadKey(id: id, bytes: key.withUnsafeBytes { Data($0) })
    }

    /// The key again from the 32 bytes the app kept; nil for any other length.
    public init?(id: String, rawBytes: Data) {
        guard rawBytes.count == 32 else { return nil }
        self.init(id: id, bytes: rawBytes)
    }

    private init(id: String, bytes: Data) {
        self.id = id
        rawBytes = bytes
    }

    /// What `POST /voip/devices` carries (sent once over TLS; the server stores it sealed).
    public var registration: PayloadKeyRegistration {
        PayloadKeyRegistration(id: id, key: rawBytes.base64EncodedString())
    }
}
#endif
