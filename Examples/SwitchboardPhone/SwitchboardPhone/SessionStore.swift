import Foundation
import Security
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

    private static let service = "com.example.switchboard.phone"
    private static let account = "session"

    func load() -> Saved? {
        var query = Self.baseQuery
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, let data = result as? Data else {
            return nil
        }
        return try? JSONDecoder().decode(Saved.self, from: data)
    }

    func save(_ saved: Saved) {
        guard let data = try? JSONEncoder().encode(saved) else { return }
        SecItemDelete(Self.baseQuery as CFDictionary)
        var item = Self.baseQuery
        item[kSecValueData as String] = data
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        SecItemAdd(item as CFDictionary, nil)
        AppGroup.defaults.set(saved.server, forKey: Keys.lastServer)
    }

    func clear() {
        SecItemDelete(Self.baseQuery as CFDictionary)
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

    private static var baseQuery: [String: Any] {
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
