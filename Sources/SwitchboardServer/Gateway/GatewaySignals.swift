import Foundation
import SwitchboardPush
import SwitchboardStore

/// The gateway's namespace inside the outbox: its jobs name calls and users as
/// `gw/<app>/<id>`, so they never meet the server's own.
enum GatewayNamespace {
    static let prefix = "gw/"
    static func callKey(app: String, call: String) -> String { "\(prefix)\(app)/\(call)" }
    static func userKey(app: String, user: String) -> String { "\(prefix)\(app)/\(user)" }
    /// The app and id of a namespaced key; `nil` for the server's own ids.
    static func split(_ key: String) -> (app: String, id: String)? {
        guard key.hasPrefix(prefix) else { return nil }
        let rest = key.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        return (String(rest[..<slash]), String(rest[rest.index(after: slash)...]))
    }
}
