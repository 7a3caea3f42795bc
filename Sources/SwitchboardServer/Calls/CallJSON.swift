import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardWire

/// Call JSON written by hand for the hot path (every call request and read answers with a
/// call): the bytes `JSONBody.makeEncoder()` (sorted keys, slashes unescaped) produces for
/// `CallInfo`, at a fraction of `JSONEncoder`'s cost. `CallJSONTests` holds the two together.
enum CallJSON {
    /// One call.
    static func call(_ call: CallInfo) -> [UInt8] {
        var text = ""
        text.reserveCapacity(512)
        append(call, to: &text)
        return Array(text.utf8)
    }

    /// An array of calls.
    static func calls(_ calls: [CallInfo]) -> [UInt8] {
        var text = "["
        for (index, call) in calls.enumerated() {
            if index > 0 { text += "," }
            append(call, to: &text)
        }
        text += "]"
        return Array(text.utf8)
    }

    private static func append(_ call: CallInfo, to text: inout String) {
        text += "{\"answeredAt\":"
        string(call.answeredAt, to: &text)
        text += ",\"createdAt\":"
        string(call.createdAt, to: &text)
        text += ",\"createdBy\":"
        string(call.createdBy, to: &text)
        text += ",\"endReason\":"
        string(call.endReason?.rawValue, to: &text)
        text += ",\"endedAt\":"
        string(call.endedAt, to: &text)
        text += ",\"id\":"
        string(call.id, to: &text)
        text += ",\"invitations\":["
        for (index, invitation) in call.invitations.enumerated() {
            text += index == 0 ? "{\"state\":" : ",{\"state\":"
            string(invitation.state.rawValue, to: &text)
            text += ",\"updatedAt\":"
            string(invitation.updatedAt, to: &text)
            text += ",\"userId\":"
            string(invitation.userId, to: &text)
            text += "}"
        }
        text += "],\"mode\":"
        string(call.mode.rawValue, to: &text)
        text += ",\"participants\":["
        for (index, participant) in call.participants.enumerated() {
            text += index == 0 ? "{\"joinedAt\":" : ",{\"joinedAt\":"
            string(participant.joinedAt, to: &text)
            text += ",\"leftAt\":"
            string(participant.leftAt, to: &text)
            text += ",\"userId\":"
            string(participant.userId, to: &text)
            text += "}"
        }
        text += "],\"scopeId\":"
        string(call.scopeId, to: &text)
        text += ",\"scopeKind\":"
        string(call.scopeKind.rawValue, to: &text)
        text += ",\"state\":"
        string(call.state.rawValue, to: &text)
        text += "}"
    }

    private static func string(_ value: String?, to text: inout String) {
        guard let value else {
            text += "null"
            return
        }
        text += "\""
        text += JSONText.escape(value)
        text += "\""
    }
}

extension HTTPResponse {
    /// A call as JSON (`CallJSON`, not `JSONEncoder`).
    static func json(_ call: CallInfo, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: CallJSON.call(call))
    }

    /// Calls as a JSON array (`CallJSON`, not `JSONEncoder`).
    static func json(_ calls: [CallInfo], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: CallJSON.calls(calls))
    }
}
