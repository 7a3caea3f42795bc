import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardWire

/// Call JSON written by hand for the hot path (every call request and read answers with a
/// call): the bytes `JSONBody.makeEncoder()` (sorted keys, slashes unescaped) produces for
/// `CallInfo`, at a fraction of `JSONEncoder`'s cost. `CallJSONTests` holds the two together.
enum CallJSON {
    /// One call.
    /// One call; with `media`, the media token beside its fields (accept and join).
    static func call(_ call: CallInfo, media: MediaToken? = nil) -> [UInt8] {
        var text = ""
        text.reserveCapacity(media == nil ? 512 : 1024)
        append(call, media: media, to: &text)
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

    private static func append(_ call: CallInfo, media: MediaToken? = nil, to text: inout String) {
        text += "{\"answeredAt\":"
        JSONText.appendString(call.answeredAt, to: &text)
        text += ",\"createdAt\":"
        JSONText.appendString(call.createdAt, to: &text)
        text += ",\"createdBy\":"
        JSONText.appendString(call.createdBy, to: &text)
        text += ",\"endReason\":"
        JSONText.appendString(call.endReason?.rawValue, to: &text)
        text += ",\"endedAt\":"
        JSONText.appendString(call.endedAt, to: &text)
        text += ",\"id\":"
        JSONText.appendString(call.id, to: &text)
        text += ",\"invitations\":["
        for (index, invitation) in call.invitations.enumerated() {
            text += index == 0 ? "{\"state\":" : ",{\"state\":"
            JSONText.appendString(invitation.state.rawValue, to: &text)
            text += ",\"updatedAt\":"
            JSONText.appendString(invitation.updatedAt, to: &text)
            text += ",\"userId\":"
            JSONText.appendString(invitation.userId, to: &text)
            text += "}"
        }
        text += "]"
        if let media {
            text += ",\"media\":{\"expiresAt\":"
            JSONText.appendString(media.expiresAt, to: &text)
            text += ",\"token\":"
            JSONText.appendString(media.token, to: &text)
            text += ",\"url\":"
            JSONText.appendString(media.url, to: &text)
            text += "}"
        }
        text += ",\"mode\":"
        JSONText.appendString(call.mode.rawValue, to: &text)
        text += ",\"participants\":["
        for (index, participant) in call.participants.enumerated() {
            text += index == 0 ? "{\"joinedAt\":" : ",{\"joinedAt\":"
            JSONText.appendString(participant.joinedAt, to: &text)
            text += ",\"leftAt\":"
            JSONText.appendString(participant.leftAt, to: &text)
            text += ",\"userId\":"
            JSONText.appendString(participant.userId, to: &text)
            text += "}"
        }
        text += "],\"scopeId\":"
        JSONText.appendString(call.scopeId, to: &text)
        text += ",\"scopeKind\":"
        JSONText.appendString(call.scopeKind.rawValue, to: &text)
        text += ",\"state\":"
        JSONText.appendString(call.state.rawValue, to: &text)
        text += "}"
    }
}

extension HTTPResponse {
    /// A call as JSON (`CallJSON`, not `JSONEncoder`).
    static func json(_ call: CallInfo, media: MediaToken? = nil, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: CallJSON.call(call, media: media))
    }

    /// Calls as a JSON array (`CallJSON`, not `JSONEncoder`).
    static func json(_ calls: [CallInfo], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: CallJSON.calls(calls))
    }
}
