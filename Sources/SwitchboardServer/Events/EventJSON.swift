import SwitchboardHTTP
import SwitchboardWire
import SwitchboardObservability

/// Event JSON written by hand for the hot path (every long-poll answer and stream frame):
/// the same bytes `JSONEncoder` with sorted keys produces, at a fraction of the cost.
enum EventJSON {
    /// `{"cursor":…,"events":[…]}`.
    static func page(_ events: [Event], cursor: Int64) -> [UInt8] {
        var text = "{\"cursor\":\(cursor),\"events\":["
        for (index, event) in events.enumerated() {
            if index > 0 { text += "," }
            append(event, to: &text)
        }
        text += "]}"
        return Array(text.utf8)
    }

    /// One event object.
    static func event(_ event: Event) -> String {
        var text = ""
        append(event, to: &text)
        return text
    }

    private static func append(_ event: Event, to text: inout String) {
        JSONObjectWriter.write(into: &text) { object in
            object.string("callId", event.callId)
            object.string("conversationId", event.conversationId)
            object.string("createdAt", event.createdAt)
            object.string("groupId", event.groupId)
            object.number("id", event.id)
            object.string("kind", event.kind.rawValue)
            object.string("messageId", event.messageId)
        }
    }
}
