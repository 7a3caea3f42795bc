import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardWire

/// Call JSON written by hand for the hot path (every call request and read answers with a
/// call): the bytes `JSONBody.makeEncoder()` (sorted keys, slashes unescaped) produces for
/// `CallInfo`, at a fraction of `JSONEncoder`'s cost. `CallJSONTests` holds the two together.
enum CallJSON {
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
        JSONObjectWriter.write(into: &text) { object in
            object.string("answeredAt", call.answeredAt)
            object.string("createdAt", call.createdAt)
            object.string("createdBy", call.createdBy)
            object.string("endReason", call.endReason?.rawValue)
            object.string("endedAt", call.endedAt)
            object.string("id", call.id)
            object.objects("invitations", call.invitations) { entry, invitation in
                entry.string("state", invitation.state.rawValue)
                entry.string("updatedAt", invitation.updatedAt)
                entry.string("userId", invitation.userId)
            }
            if let media {
                object.object("media") { token in
                    token.string("expiresAt", media.expiresAt)
                    token.string("token", media.token)
                    token.string("url", media.url)
                }
            }
            object.string("mode", call.mode.rawValue)
            object.objects("participants", call.participants) { entry, participant in
                entry.string("joinedAt", participant.joinedAt)
                entry.string("leftAt", participant.leftAt)
                entry.string("userId", participant.userId)
            }
            object.string("scopeId", call.scopeId)
            object.string("scopeKind", call.scopeKind.rawValue)
            object.string("state", call.state.rawValue)
        }
    }
}

extension HTTPResponse {
    /// A call as JSON (`CallJSON`, not `JSONEncoder`).
    static func json(_ call: CallInfo, media: MediaToken? = nil, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"], body: CallJSON.call(call, media: media))
    }

    /// Calls as a JSON array (`CallJSON`, not `JSONEncoder`).
    static func json(_ calls: [CallInfo], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: CallJSON.calls(calls))
    }
}
