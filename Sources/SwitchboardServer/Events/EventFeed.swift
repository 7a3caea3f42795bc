import SwitchboardWire

/// Reads of a user's event feed, as the API answers them.
enum EventFeed {
    /// The most events one answer carries.
    static let pageSize = 100

    /// Events of `userID` after `after`, ascending, at most `pageSize`.
    /// Throws 410 `CURSOR_EXPIRED` when retention already deleted events the cursor has not seen.
    static func page(for userID: String, after: Int64, in events: any EventRepository) throws -> [Event] {
        switch try events.page(for: userID, after: after, limit: pageSize) {
        case .events(let page): return page
        case .cursorExpired:
            throw APIError(
                .cursorExpired,
                "events after this cursor were pruned; take a new snapshot and continue from its eventCursor")
        }
    }
}
