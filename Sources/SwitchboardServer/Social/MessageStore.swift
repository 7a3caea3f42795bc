import SwitchboardStore
import SwitchboardWire

/// Messages and read markers, for conversations and groups alike.
enum MessageStore {
    enum Scope: Sendable {
        case conversation(String)
        case group(String)

        var id: String {
            switch self {
            case .conversation(let id), .group(let id): id
            }
        }

        var column: String {
            switch self {
            case .conversation: "conversation_id"
            case .group: "group_id"
            }
        }
    }

    static let maxTextLength = 4000

    /// Stores a message (or returns the one already stored under the sender's `clientId`).
    static func send(_ request: SendMessage, in scope: Scope, from senderID: String, transaction: WriteTransaction) throws -> (Message, isNew: Bool) {
        let text = try AccountValidation.text(request.text, field: "text", maxLength: maxTextLength)
        if let clientID = request.clientId {
            guard (1...64).contains(clientID.utf8.count) else {
                throw APIError.validation("'clientId' must be 1 to 64 characters", field: "clientId")
            }
            if let row = try transaction.connection.query(
                "SELECT * FROM messages WHERE sender_id = ? AND client_id = ?", [.text(senderID), .text(clientID)]).first
            {
                let existing = try message(from: row)
                guard existing.text == text, (existing.conversationId ?? existing.groupId) == scope.id else {
                    throw APIError(status: 409, code: "CLIENT_ID_REUSED", message: "'clientId' was already used for a different message", field: "clientId")
                }
                return (existing, false)
            }
        }
        let id = transaction.newID()
        try transaction.connection.run(
            "INSERT INTO messages (id, \(scope.column), sender_id, client_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(id), .text(scope.id), .text(senderID), request.clientId.map(SQLiteValue.text) ?? .null, .text(text), .text(transaction.timestamp)])
        if case .conversation(let conversationID) = scope {
            return (Message(id: id, conversationId: conversationID, groupId: nil, senderId: senderID, text: text, createdAt: transaction.timestamp), true)
        }
        return (Message(id: id, conversationId: nil, groupId: scope.id, senderId: senderID, text: text, createdAt: transaction.timestamp), true)
    }

    /// Up to `limit` messages older than `before` (or the newest), oldest first.
    static func page(in scope: Scope, before: String?, limit: Int, connection: SQLiteConnection) throws -> MessagePage {
        var beforeSeq = Int64.max
        if let before {
            guard let row = try connection.query(
                "SELECT seq FROM messages WHERE id = ? AND \(scope.column) = ?", [.text(before), .text(scope.id)]).first
            else { throw APIError.validation("'before' is not a message of this \(scope.column == "group_id" ? "group" : "conversation")", field: "before") }
            beforeSeq = try row.int64("seq")
        }
        let rows = try connection.query(
            "SELECT * FROM messages WHERE \(scope.column) = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
            [.text(scope.id), .integer(beforeSeq), .integer(Int64(limit + 1))])
        let hasMore = rows.count > limit
        return MessagePage(messages: try rows.prefix(limit).reversed().map(message(from:)), hasMore: hasMore)
    }

    /// Moves the reader's marker forward to `messageID` (never backward). Returns the marker
    /// and whether it moved.
    static func markRead(_ messageID: String, in scope: Scope, by userID: String, transaction: WriteTransaction) throws -> (ReadMarker, moved: Bool) {
        guard let row = try transaction.connection.query(
            "SELECT seq FROM messages WHERE id = ? AND \(scope.column) = ?", [.text(messageID), .text(scope.id)]).first
        else { throw APIError.validation("'messageId' is not a message of this \(scope.column == "group_id" ? "group" : "conversation")", field: "messageId") }
        let seq = try row.int64("seq")
        let moved = try transaction.connection.run(
            """
            INSERT INTO read_markers (scope_id, user_id, message_seq, updated_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (scope_id, user_id) DO UPDATE SET message_seq = excluded.message_seq, updated_at = excluded.updated_at
            WHERE excluded.message_seq > read_markers.message_seq
            """,
            [.text(scope.id), .text(userID), .integer(seq), .text(transaction.timestamp)]) > 0
        let marker = try readMarkers(in: scope, connection: transaction.connection).first { $0.userId == userID }
        return (marker ?? ReadMarker(userId: userID, messageId: messageID, updatedAt: transaction.timestamp), moved)
    }

    static func readMarkers(in scope: Scope, connection: SQLiteConnection) throws -> [ReadMarker] {
        try connection.query(
            """
            SELECT r.user_id, m.id AS message_id, r.updated_at FROM read_markers r
            JOIN messages m ON m.seq = r.message_seq WHERE r.scope_id = ? ORDER BY r.user_id
            """,
            [.text(scope.id)]
        ).map { ReadMarker(userId: try $0.string("user_id"), messageId: try $0.string("message_id"), updatedAt: try $0.string("updated_at")) }
    }

    static func message(from row: SQLiteRow) throws -> Message {
        Message(
            id: try row.string("id"), conversationId: try row.optionalString("conversation_id"),
            groupId: try row.optionalString("group_id"), senderId: try row.string("sender_id"),
            text: try row.string("body"), createdAt: try row.string("created_at"))
    }
}
