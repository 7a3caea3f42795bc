import SwitchboardWire

/// Messages and read markers as the API answers them, for conversations and groups alike:
/// validation, idempotent retries and the 404s (the rows are ``MessageRepository``'s).
enum MessageStore {
    typealias Scope = MessageScope

    static let maxTextLength = 4000

    /// The message the sender already stored under this request's `clientId`, if any: a
    /// retry gets it back even if sending would no longer be allowed. The same `clientId`
    /// with other content is 409.
    static func replay(
        _ request: SendMessage, in scope: Scope, from senderID: String, messages: any MessageRepository
    ) throws -> Message? {
        guard let clientID = request.clientId else { return nil }
        guard (1...64).contains(clientID.unicodeScalars.count) else {
            throw APIError.validation("'clientId' must be 1 to 64 characters (Unicode code points)", field: "clientId")
        }
        guard let existing = try messages.message(sentBy: senderID, clientID: clientID) else { return nil }
        let text = try validatedText(request.text)
        guard existing.text == text, (existing.conversationId ?? existing.groupId) == scope.id else {
            throw APIError(.clientIdReused, "'clientId' was already used for a different message", field: "clientId")
        }
        return existing
    }

    /// Stores a new message; call `replay` first.
    static func insert(
        _ request: SendMessage, in scope: Scope, from senderID: String, transaction: WriteTransaction
    ) throws -> Message {
        let text = try validatedText(request.text)
        let id = transaction.newID()
        let message: Message
        switch scope {
        case .conversation(let conversationID):
            message = Message(
                id: id, conversationId: conversationID, groupId: nil, senderId: senderID, text: text,
                createdAt: transaction.timestamp)
        case .group(let groupID):
            message = Message(
                id: id, conversationId: nil, groupId: groupID, senderId: senderID, text: text,
                createdAt: transaction.timestamp)
        }
        try transaction.messages.insert(message, clientID: request.clientId)
        return message
    }

    /// `limit`: digits only, 1–100, default 50.
    static func limit(_ text: String?) throws(APIError) -> Int {
        guard let text else { return 50 }
        guard !text.isEmpty, text.utf8.count <= 3, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int(text),
            (1...100).contains(value)
        else { throw APIError.validation("'limit' must be an integer from 1 to 100", field: "limit") }
        return value
    }

    static func validatedText(_ text: String) throws(APIError) -> String {
        try AccountValidation.text(text, field: "text", maxLength: maxTextLength, multiline: true)
    }

    /// Up to `limit` messages older than `before` (or the newest), oldest first.
    static func page(
        in scope: Scope, before: String?, limit: Int, messages: any MessageRepository
    ) throws -> MessagePage {
        guard let page = try messages.page(in: scope, before: before, limit: limit) else {
            throw unknownMessage(field: "before", in: scope)
        }
        return page
    }

    /// Moves the reader's marker forward to `messageID` (never backward). Returns the marker
    /// and whether it moved.
    static func markRead(
        _ messageID: String, in scope: Scope, by userID: String, transaction: WriteTransaction
    ) throws -> (ReadMarker, moved: Bool) {
        let messages = transaction.messages
        guard let moved = try messages.markRead(messageID, in: scope, by: userID, at: transaction.timestamp) else {
            throw unknownMessage(field: "messageId", in: scope)
        }
        let marker = try messages.readMarkers(in: scope).first { $0.userId == userID }
        return (marker ?? ReadMarker(userId: userID, messageId: messageID, updatedAt: transaction.timestamp), moved)
    }

    /// 404 naming the field: the id is well-formed but names no message of this conversation or
    /// group (like an unknown user in a group's member list).
    private static func unknownMessage(field: String, in scope: Scope) -> APIError {
        let place = if case .group = scope { "group" } else { "conversation" }
        return APIError(.notFound, "'\(field)' is not a message of this \(place)", field: field)
    }
}
