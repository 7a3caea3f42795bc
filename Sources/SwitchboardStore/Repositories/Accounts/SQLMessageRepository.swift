import Foundation
import SwitchboardWire

/// ``MessageRepository`` in SQL that SQLite and PostgreSQL both run (tables `messages`, `read_markers`),
/// working on the connection of one transaction or snapshot. `seq` orders messages.
package struct SQLMessageRepository: MessageRepository {
    package let connection: any SQLExecutor

    private static func column(_ scope: MessageScope) -> String {
        switch scope {
        case .conversation: "conversation_id"
        case .group: "group_id"
        }
    }

    package func message(sentBy senderID: String, clientID: String) throws -> Message? {
        try connection.query(
            "SELECT * FROM messages WHERE sender_id = ? AND client_id = ?", [.text(senderID), .text(clientID)]
        )
        .first.map(Self.message(from:))
    }

    package func insert(_ message: Message, clientID: String?) throws {
        try insert(message, clientID: clientID, onceOnly: false)
    }

    package func insertCallMessage(_ message: Message) throws -> Bool {
        try insert(message, clientID: nil, onceOnly: true) == 1
    }

    @discardableResult
    private func insert(_ message: Message, clientID: String?, onceOnly: Bool) throws -> Int {
        let (column, scopeID) =
            message.groupId.map { ("group_id", $0) } ?? ("conversation_id", message.conversationId ?? "")
        var details = SQLiteValue.null
        if let call = message.call {
            details = .text(String(decoding: try JSONEncoder().encode(call), as: UTF8.self))
        }
        return try connection.run(
            """
            INSERT INTO messages (id, \(column), sender_id, client_id, body, created_at, kind, call_id, call_details)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)\(onceOnly ? " ON CONFLICT DO NOTHING" : "")
            """,
            [
                .text(message.id), .text(scopeID), .text(message.senderId), clientID.map(SQLiteValue.text) ?? .null,
                .text(message.text), .text(message.createdAt), .text(message.kind.rawValue),
                message.call.map { .text($0.callId) } ?? .null, details,
            ])
    }

    package func page(in scope: MessageScope, before messageID: String?, limit: Int) throws -> MessagePage? {
        var beforeSeq = Int64.max
        if let messageID {
            guard let seq = try seq(of: messageID, in: scope) else { return nil }
            beforeSeq = seq
        }
        let rows = try connection.query(
            "SELECT * FROM messages WHERE \(Self.column(scope)) = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
            [.text(scope.id), .integer(beforeSeq), .integer(Int64(limit + 1))])
        return MessagePage(
            messages: try rows.prefix(limit).reversed().map(Self.message(from:)), hasMore: rows.count > limit)
    }

    package func markRead(
        _ messageID: String, in scope: MessageScope, by userID: String, at timestamp: String
    ) throws -> Bool? {
        guard let seq = try seq(of: messageID, in: scope) else { return nil }
        return try connection.run(
            """
            INSERT INTO read_markers (scope_id, user_id, message_seq, updated_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (scope_id, user_id) DO UPDATE SET message_seq = excluded.message_seq, updated_at = excluded.updated_at
            WHERE excluded.message_seq > read_markers.message_seq
            """,
            [.text(scope.id), .text(userID), .integer(seq), .text(timestamp)]) > 0
    }

    package func readMarkers(in scope: MessageScope) throws -> [ReadMarker] {
        try connection.query(
            """
            SELECT r.user_id, m.id AS message_id, r.updated_at FROM read_markers r
            JOIN messages m ON m.seq = r.message_seq WHERE r.scope_id = ? ORDER BY r.user_id
            """,
            [.text(scope.id)]
        ).map {
            ReadMarker(
                userId: try $0.string("user_id"), messageId: try $0.string("message_id"),
                updatedAt: try $0.string("updated_at"))
        }
    }

    private func seq(of messageID: String, in scope: MessageScope) throws -> Int64? {
        try connection.query(
            "SELECT seq FROM messages WHERE id = ? AND \(Self.column(scope)) = ?", [.text(messageID), .text(scope.id)]
        )
        .first?.int64("seq")
    }

    private static func message(from row: SQLiteRow) throws -> Message {
        Message(
            id: try row.string("id"), conversationId: try row.optionalString("conversation_id"),
            groupId: try row.optionalString("group_id"), senderId: try row.string("sender_id"),
            text: try row.string("body"), createdAt: try row.string("created_at"),
            kind: MessageKind(rawValue: try row.string("kind")),
            call: try row.optionalString("call_details").flatMap {
                try? JSONDecoder().decode(CallSummary.self, from: Data($0.utf8))
            })
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
