import Foundation
import Security
import SwitchboardCallKit
import SwitchboardKit

/// What survives a restart: the session in the keychain (readable after the first unlock,
/// so a VoIP push that launches the app on a locked phone still finds it), the rest in the
/// app group's defaults.
struct SessionStore: Sendable {
    /// A signed-in session on one server.
    struct Saved: Codable, Sendable, Equatable {
        /// ``ServerAddress/description``: a full base URL, parsed again at launch.
        var server: String
        var token: String
        var user: User
        /// The event cursor of the login, for a feed whose own cursor was never saved.
        var eventCursor: Int64
    }

    /// This installation's VoIP payload key, as the keychain keeps it.
    private struct StoredKey: Codable {
        var id: String
        var key: Data
    }

    private static let service = "com.example.switchboard.phone"

    func load() -> Saved? {
        Self.read("session").flatMap { try? JSONDecoder().decode(Saved.self, from: $0) }
    }

    func save(_ saved: Saved) {
        guard let data = try? JSONEncoder().encode(saved) else { return }
        Self.write(data, as: "session")
        AppGroup.defaults.set(saved.server, forKey: Keys.lastServer)
    }

    func clear() {
        SecItemDelete(Self.query("session") as CFDictionary)
    }

    /// The key the server seals this installation's VoIP pushes under (registered with the
    /// VoIP token, `VoIPPushReceiver(payloadKey:)`), so the caller's name never crosses Apple's
    /// servers in the clear. Made once, kept in the keychain beside the session; it outlives
    /// sign-outs (the device keeps it, every server it registers with gets it).
    func payloadKey() -> VoIPPayloadKey {
        if let data = Self.read("payload-key"), let stored = try? JSONDecoder().decode(StoredKey.self, from: data),
            let key = VoIPPayloadKey(id: stored.id, rawBytes: stored.key)
        {
            return key
        }
        let key = VoIPPayloadKey.generate(id: "phone-\(UUID().uuidString.prefix(8).lowercased())")
        if let data = try? JSONEncoder().encode(StoredKey(id: key.id, key: key.rawBytes)) {
            Self.write(data, as: "payload-key")
        }
        return key
    }

    private static func read(_ account: String) -> Data? {
        var query = query(account)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
        return result as? Data
    }

    /// Readable after the first unlock: a VoIP push that launches the app on a locked phone
    /// still finds the session and the key.
    private static func write(_ data: Data, as account: String) {
        SecItemDelete(query(account) as CFDictionary)
        var item = query(account)
        item[kSecValueData as String] = data
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        SecItemAdd(item as CFDictionary, nil)
    }

    /// The server last signed in to, to fill the sign-in form.
    var lastServer: String? { AppGroup.defaults.string(forKey: Keys.lastServer) }

    /// This installation's id on the server (`POST /voip/devices`): made once, kept.
    var deviceID: UUID {
        let defaults = AppGroup.defaults
        if let text = defaults.string(forKey: Keys.deviceID), let id = UUID(uuidString: text) { return id }
        let id = UUID()
        defaults.set(id.uuidString, forKey: Keys.deviceID)
        return id
    }

    private static func query(_ account: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
    }

    private enum Keys {
        static let lastServer = "lastServer"
        static let deviceID = "deviceID"
    }
}

/// The event cursor of one user on one server, in the app group's defaults; saved by the
/// feed only after a batch was handled.
struct DefaultsCursorStore: EventCursorStore {
    let key: String

    init(server: ServerAddress, userID: String) {
        key = "eventCursor.\(userID)@\(server.description)"
    }

    func load() async -> Int64? {
        (AppGroup.defaults.object(forKey: key) as? NSNumber)?.int64Value
    }

    func save(_ cursor: Int64) async {
        AppGroup.defaults.set(NSNumber(value: cursor), forKey: key)
    }

    func remove() {
        AppGroup.defaults.removeObject(forKey: key)
    }
}
