import SwitchboardWire

/// Where messages are: a 1:1 conversation or a group.
public enum MessageScope: Sendable, Hashable {
    case conversation(String)
    case group(String)

    public var id: String {
        switch self {
        case .conversation(let id), .group(let id): id
        }
    }
}

/// Messages and read markers, for conversations and groups alike. Messages keep the order they
/// were stored in; a reader's marker only moves forward. SQLite implements it today
/// (``SQLMessageRepository``); the contract suite tests every implementation.
public protocol MessageRepository {
    /// The message `senderID` stored under `clientID` (a retry's), anywhere.
    func message(sentBy senderID: String, clientID: String) throws -> Message?
    /// Stores `message` (in the scope its conversation or group id names) as the newest there.
    func insert(_ message: Message, clientID: String?) throws
    /// Stores a call's `call` message, unless its call already has one; returns whether it did.
    func insertCallMessage(_ message: Message) throws -> Bool
    /// Up to `limit` messages older than `before` (or the newest), oldest first, and whether
    /// older ones remain; nil when `before` is not a message of the scope.
    func page(in scope: MessageScope, before messageID: String?, limit: Int) throws -> MessagePage?
    /// Moves the reader's marker forward to `messageID`: true when it moved, false when it
    /// already was there or later, nil when `messageID` is not a message of the scope.
    func markRead(_ messageID: String, in scope: MessageScope, by userID: String, at timestamp: String) throws -> Bool?
    /// Every reader's marker in the scope, by user id.
    func readMarkers(in scope: MessageScope) throws -> [ReadMarker]
}
