import SwitchboardWire

/// What an event refers to besides its user (references that do not apply are nil).
public struct EventReferences: Sendable, Equatable {
    public var conversationID: String?
    public var groupID: String?
    public var messageID: String?
    public var callID: String?

    public init(conversationID: String? = nil, groupID: String? = nil, messageID: String? = nil, callID: String? = nil)
    {
        self.conversationID = conversationID
        self.groupID = groupID
        self.messageID = messageID
        self.callID = callID
    }
}

/// A user's events after a cursor, or word that retention already deleted some of them.
public enum EventPageResult: Sendable, Equatable {
    case events([Event])
    /// Events the cursor has not seen were pruned: the client must take a new snapshot.
    case cursorExpired
}

/// Each user's event feed: rows appended in the transaction of the change they signal, read
/// in id order after a cursor, pruned by age. Ids grow with every append across all users.
/// SQLite implements it today (``SQLEventRepository``); the contract suite tests every
/// implementation.
public protocol EventRepository {
    /// Appends one `kind` event for each user (in the order given; no duplicates), and returns
    /// each new row's user and id, in id order.
    func append(
        _ kind: EventKind, to userIDs: [String], references: EventReferences, at timestamp: String
    ) throws -> [(userID: String, id: Int64)]
    /// Appends one event for each member of `groupID` (in the order they joined, ties by user
    /// id), with the group as its reference, and returns them as
    /// ``append(_:to:references:at:)`` does.
    func append(
        _ kind: EventKind, toMembersOf groupID: String, references: EventReferences, at timestamp: String
    ) throws
        -> [(userID: String, id: Int64)]
    /// At most `limit` of the user's events after `after`, ascending.
    func page(for userID: String, after: Int64, limit: Int) throws -> EventPageResult
    /// The newest event id of each of `userIDs` that has events (those without are absent).
    func newestIDs(of userIDs: [String]) throws -> [String: Int64]
    /// ``newestIDs(of:)`` for the members of `groupID`.
    func newestIDs(ofMembersOf groupID: String) throws -> [String: Int64]
    /// Where a fresh snapshot of the user starts: their newest event id, or the newest one
    /// retention deleted when all are gone (0 for none).
    func cursor(for userID: String) throws -> Int64
    /// Deletes the events created before `cutoff` (stored timestamp text), remembering per user
    /// the newest id deleted; returns how many it deleted.
    func prune(before cutoff: String) throws -> Int
}
