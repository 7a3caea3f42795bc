import SwitchboardCore
import SwitchboardStore
import SwitchboardWire

/// What a call's change tells the world outside the call (``CallChronicle``), written in the
/// change's own transaction: its webhook events, and, when the call ends, the `call` message
/// of its conversation or group (once per call; `callMessages` turns them off).
extension CallService {
    static func chronicle(from old: CallRecord?, to new: CallRecord, in transaction: WriteTransaction) throws {
        let events = CallChronicle.events(from: old, to: new)
        if !events.isEmpty {
            let endpoints = try transaction.webhookEndpoints.all()
            if !endpoints.isEmpty {
                let info = CallStore.info(new)
                for event in events {
                    var data = CallEventData(call: info, userId: event.userID)
                    if event.type == .callEnded {
                        data.outcome = CallChronicle.outcome(of: new)
                        data.durationSeconds = CallChronicle.durationSeconds(of: new)
                    }
                    try WebhookOutbox.emit(event.type, data, order: "call:\(new.id)", to: endpoints, in: transaction)
                }
            }
        }
        guard old?.state != .ended, new.state == .ended, transaction.callMessages,
            let summary = CallChronicle.summary(of: new)
        else { return }
        let message = Message(
            id: transaction.newID(), conversationId: new.scopeKind == .conversation ? new.scopeID : nil,
            groupId: new.scopeKind == .group ? new.scopeID : nil, senderId: new.createdBy,
            text: CallChronicle.text(of: summary), createdAt: transaction.timestamp, kind: .call, call: summary)
        guard try transaction.messages.insertCallMessage(message) else { return }
        switch new.scopeKind {
        case .group:
            try transaction.appendEvent(.groupMessage, toMembersOf: new.scopeID, messageID: message.id)
        default:
            try transaction.appendEvent(
                .message, to: new.involvedUserIDs, conversationID: new.scopeID, messageID: message.id)
        }
    }
}
