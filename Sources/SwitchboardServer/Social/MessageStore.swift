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

    /// The message the sender already stored under this request's `clientId`, if any: a
    /// retry gets it back even if sending would no longer be allowed. The same `clientId`
    /// with other content is 409.
    static func replay(_ request: SendMessage, in scope: Scope, from senderID: String, connection: SQLiteConnection) throws -> Message? {
        guard let clientID = request.clientId else { return nil }
        guard (1...64).contains(clientID.unicodeScalars.count) else {
            throw APIError.validation("'clientId' must be 1 to 64 characters (Unicode code points)", field: "clientId")
        }
        guard let row = try connection.query(
            "SELECT * FROM messages WHERE sender_id = ? AND client_id = ?", [.text(senderID), .text(clientID)]).first
        else { return nil }
        let existing = try message(from: row)
        let text = try validatedText(request.text)
        guard existing.text == text, (existing.conversationId ?? existing.groupId) == scope.id else {
            throw APIError(status: 409, code: "CLIENT_ID_REUSED", message: "'clientId' was already used for a different message", field: "clientId")
        }
        return existing
    }

    /// Stores a new message; call `replay` first.
    static func insert(_ request: SendMessage, in scope: Scope, from senderID: String, transaction: WriteTransaction) throws -> Message {
        let text = try validatedText(request.text)
        let id = transaction.newID()
        try transaction.connection.run(
            "INSERT INTO messages (id, \(scope.column), sender_id, client_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(id), .text(scope.id), .text(senderID), request.clientId.map(SQLiteValue.text) ?? .null, .text(text), .text(transaction.timestamp)])
        switch scope {
        case .conversation(let conversationID):
            return Message(id: id, conversationId: conversationID, groupId: nil, senderId: senderID, text: text, createdAt: transaction.timestamp)
        case .group(let groupID):
            return Message(id: id, conversationId: nil, groupId: groupID, senderId: senderID, text: text, createdAt: transaction.timestamp)
        }
    }

    /// `limit`: digits only, 1–100, default 50.
    static func limit(_ text: String?) throws(APIError) -> Int {
        guard let text else { return 50 }
        guard !text.isEmpty, text.utf8.count <= 3, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(text),
            (1...100).contains(value)
        else { throw APIError.validation("'limit' must be an integer from 1 to 100", field: "limit") }
        return value
    }

    static func validatedText(_ text: String) throws(APIError) -> String {
        try AccountValidation.text(text, field: "text", maxLength: maxTextLength, multiline: true)
    }

    /// Up to `limit` messages older than `before` (or the newest), oldest first.
    static func page(in scope: Scope, before: String?, limit: Int, connection: SQLiteConnection) throws -> MessagePage {
        var beforeSeq = Int64.max
        if let before {
            guard let row = try connection.query(
                "SELECT seq FROM messages WHERE id = ? AND \(scope.column) = ?", [.text(before), .text(scope.id)]).first
            else { throw unknownMessage(field: "before", in: scope) }
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
        else { throw unknownMessage(field: "messageId", in: scope) }
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

    /// 404 naming the field: the id is well-formed but names no message of this conversation or
    /// group (like an unknown user in a group's member list).
    private static func unknownMessage(field: String, in scope: Scope) -> APIError {
        let place = scope.column == "group_id" ? "group" : "conversation"
        return APIError(status: 404, code: "NOT_FOUND", message: "'\(field)' is not a message of this \(place)", field: field)
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
