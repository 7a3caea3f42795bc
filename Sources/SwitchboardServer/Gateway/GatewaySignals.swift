import Foundation
import SwitchboardPush
import SwitchboardStore

/// An app's user's device, as the gateway keeps it (apart from the server's own accounts).
struct GatewayDevice: Sendable, Equatable {
    var deviceID: String
    var platform: String
    var brand: String?
    /// By channel: token and environment.
    var tokens: [String: PushTarget]
}

/// A call signal from an app server (SPEC §8).
struct GatewaySignal: Sendable, Equatable {
    var appID: String
    var callID: String
    var roomID: String
    var type: String
    var callerID: String
    var callerName: String
    /// The app's `ext` object as JSON text, kept with the signal.
    var ext: String
    var state: String
    var createdAtMS: Int64
    var expiresAtMS: Int64
}

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
