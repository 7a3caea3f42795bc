import Foundation
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardWire
import SwitchboardPushCore

/// Keeps devices' VoIP payload keys so that a database dump alone does not reveal them: each is
/// stored encrypted (AES-256-GCM) under a key from configuration (`dataEncryptionKey`), bound to
/// its owner and id (the additional data), so a sealed key copied to another row does not open.
struct PayloadKeyVault: Sendable {
    private let secret: [UInt8]?

    /// `secret`: 32 bytes, or nil when payload keys are off.
    init(secret: [UInt8]?) {
        precondition(secret == nil || secret?.count == AESGCM.keyBytes, "dataEncryptionKey must be 32 bytes")
        self.secret = secret
    }

    var isEnabled: Bool { secret != nil }

    /// What a request that would store a secret is told when the server has no
    /// `dataEncryptionKey` to store it under.
    static let disabled = APIError(
        .dataEncryptionDisabled,
        "this server stores no secrets (its dataEncryptionKey is not set): register the device without a payload key")

    /// Encrypts `key` for storage; throws ``disabled`` when the server has no secret.
    func seal(_ key: PayloadKey, owner: String) throws -> StoredPayloadKey {
        StoredPayloadKey(id: key.id, sealed: try sealSecret(key.bytes, purpose: Self.purpose(owner: owner, id: key.id)))
    }

    /// The key again; nil when it cannot be read here (another secret, a changed row, no
    /// secret at all): its device's rings then fail with ``unreadableReason``, never go in the
    /// clear.
    func open(_ stored: StoredPayloadKey, owner: String) -> PayloadKey? {
        guard let bytes = openSecret(stored.sealed, purpose: Self.purpose(owner: owner, id: stored.id)),
            bytes.count == AESGCM.keyBytes
        else { return nil }
        return PayloadKey(id: stored.id, bytes: bytes)
    }

    /// Seals any secret for storage (a gateway app's push credentials), bound to `purpose`.
    func sealSecret(_ bytes: [UInt8], purpose: String) throws -> String {
        guard let secret else { throw Self.disabled }
        let box = try AESGCM.seal(bytes, key: secret, authenticating: Array("switchboard-secret-v1\n\(purpose)".utf8))
        return Data(box.combined).base64EncodedString()
    }

    /// A secret ``sealSecret(_:purpose:)`` sealed; nil when it cannot be opened here.
    func openSecret(_ sealed: String, purpose: String) -> [UInt8]? {
        guard let secret, let combined = Data(base64Encoded: sealed),
            let box = AESGCM.SealedBox(combined: Array(combined))
        else { return nil }
        return try? AESGCM.open(box, key: secret, authenticating: Array("switchboard-secret-v1\n\(purpose)".utf8))
    }

    /// The reason a ring fails with when its device's stored key cannot be opened.
    static let unreadableReason = "PayloadKeyUnreadable"

    /// What a payload key is bound to: its owner (`device/<device id>` or `gw/<app>/<device
    /// id>`) and its id, so a sealed key copied to another row does not open.
    private static func purpose(owner: String, id: String) -> String { "payload-key\n\(owner)\n\(id)" }

    /// The owner string of one of the server's own devices.
    static func owner(device deviceID: String) -> String { "device/\(deviceID)" }
    /// The owner string of a gateway app's device.
    static func owner(app: String, device deviceID: String) -> String { "gw/\(app)/\(deviceID)" }

    /// Checks a registration's key: an id of 1 to 64 letters, digits, `.`, `_` or `-`, and 32
    /// bytes of base64.
    static func validate(_ registration: PayloadKeyRegistration, field: String) throws(APIError) -> PayloadKey {
        let id = registration.id
        guard (1...64).contains(id.utf8.count),
            id.utf8.allSatisfy({
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
                    || [45, 46, 95].contains($0)
            })
        else {
            throw APIError.validation(
                "'\(field).id' must be 1 to 64 letters, digits, '.', '_' or '-'", field: "\(field).id")
        }
        guard let bytes = Data(base64Encoded: registration.key), bytes.count == AESGCM.keyBytes else {
            throw APIError.validation("'\(field).key' must be 32 bytes (256 bits) as base64", field: "\(field).key")
        }
        return PayloadKey(id: id, bytes: Array(bytes))
    }
}
