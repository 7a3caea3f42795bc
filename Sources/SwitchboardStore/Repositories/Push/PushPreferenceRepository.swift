import Foundation
import SwitchboardWire

/// Each person's say over their phones (``PushPreferences``), kept as its JSON in
/// `push_preferences`, one row per user who said anything. It works inside the transaction or
/// snapshot it came from.
public protocol PushPreferenceRepository {
    /// The user's preferences; nil when they never set any. A stored value that does not
    /// decode is a corrupt store, never the defaults.
    func preferences(of userID: String) throws -> PushPreferences?
    /// Stores the user's preferences (already checked).
    func set(_ preferences: PushPreferences, of userID: String, at timestamp: String) throws
}

package struct SQLPushPreferenceRepository: PushPreferenceRepository {
    package let connection: any SQLExecutor

    package init(connection: any SQLExecutor) { self.connection = connection }

    package func preferences(of userID: String) throws -> PushPreferences? {
        guard
            let row = try connection.query(
                "SELECT preferences FROM push_preferences WHERE user_id = ?", [.text(userID)]
            ).first
        else { return nil }
        let text = try row.string("preferences")
        do {
            return try JSONDecoder().decode(PushPreferences.self, from: Data(text.utf8))
        } catch {
            throw StoreError(code: .corrupt, message: "push_preferences of \(userID) does not decode: \(error)")
        }
    }

    package func set(_ preferences: PushPreferences, of userID: String, at timestamp: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(preferences), as: UTF8.self)
        _ = try connection.run(
            """
            INSERT INTO push_preferences (user_id, preferences, updated_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (user_id) DO UPDATE SET preferences = excluded.preferences, updated_at = excluded.updated_at
            """,
            [.text(userID), .text(text), .text(timestamp)])
    }
}
