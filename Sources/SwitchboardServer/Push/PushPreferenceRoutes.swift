import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardWire

/// A person's say over their phones, on the server so it follows them across devices and phone
/// makers: `GET /me/push-preferences` (the defaults until they set any) and
/// `PUT /me/push-preferences` (checked whole by ``RingPolicy``; answered as stored).
struct PushPreferenceRoutes {
    let store: ServerStore
    let authenticator: Authenticator

    /// `requested` as stored (``RingPolicy/preferences``), or 400 naming the field that is wrong.
    static func checked(_ requested: PushPreferences) throws(APIError) -> PushPreferences {
        do throws(RingPolicy.Problem) {
            return try RingPolicy(requested).preferences
        } catch {
            throw APIError.validation(error.message, field: error.field)
        }
    }

    func register(in router: inout Router) {
        let store = self.store
        router.add(
            "GET", "/me/push-preferences",
            authenticator.require { _, principal in
                let userID = principal.user.id
                let stored = try await store.snapshot { try $0.pushPreferences.preferences(of: userID) }
                return .json(stored ?? .defaults)
            })
        router.add(
            "PUT", "/me/push-preferences",
            authenticator.require { context, principal in
                let preferences = try Self.checked(try context.decode(PushPreferences.self))
                let userID = principal.user.id
                try await store.write { transaction in
                    try transaction.pushPreferences.set(preferences, of: userID, at: transaction.timestamp)
                }
                context.logger.info(
                    "push preferences set",
                    [
                        "calls": .string(preferences.calls.rawValue), "snoozed": .bool(preferences.until != nil),
                        "quietHours": .int(preferences.quietHours?.rules.count ?? 0),
                        "alwaysRing": .int(preferences.alwaysRing.count),
                    ])
                return .json(preferences)
            })
    }
}
