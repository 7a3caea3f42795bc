import Foundation
import SwitchboardWire

/// What a committed change of a call tells the world outside the call: the webhook events it
/// announces, and, when it ends the call, the record its conversation keeps. Pure: the server
/// writes both in the change's own transaction.
public enum CallChronicle {
    /// One event a change announces; `userID` for the per-invitee ones.
    public struct Event: Sendable, Equatable {
        public var type: WebhookEventType
        public var userID: String?

        public init(_ type: WebhookEventType, userID: String? = nil) {
            self.type = type
            self.userID = userID
        }
    }

    /// The events of the change from `old` (nil: the call was just created) to `new`, in the
    /// order they happened: the ring, the invitees' answers, the first answer, the end.
    public static func events(from old: CallRecord?, to new: CallRecord) -> [Event] {
        var events: [Event] = []
        if old == nil, new.state == .ringing { events.append(Event(.callRinging)) }
        let before = Dictionary(old?.invitations.map { ($0.userID, $0.state) } ?? [], uniquingKeysWith: { a, _ in a })
        for invitation in new.invitations where before[invitation.userID] != invitation.state {
            switch invitation.state {
            case .declined: events.append(Event(.callDeclined, userID: invitation.userID))
            case .missed, .cancelled:
                // A ring that ended unanswered; never for one that was not ringing (busy).
                if before[invitation.userID] == .ringing {
                    events.append(Event(.callMissed, userID: invitation.userID))
                }
            default: break
            }
        }
        if old?.answeredAt == nil, new.answeredAt != nil { events.append(Event(.callAnswered)) }
        if old?.state != .ended, new.state == .ended { events.append(Event(.callEnded)) }
        return events
    }

    /// How an ended call went, for its conversation; nil while it has not ended, and for a
    /// call that a social change ended before anyone answered (unfriended, blocked, dissolved):
    /// its conversation or group is no longer shared.
    public static func outcome(of call: CallRecord) -> CallOutcome? {
        guard call.state == .ended else { return nil }
        if call.answeredAt != nil { return .answered }
        switch call.endReason {
        case .declined?: return .declined
        case .cancelled?: return .cancelled
        case .missed?: return .missed
        case .busy?: return .busy
        default: return nil
        }
    }

    /// Whole seconds from the first answer to the end; 0 when nobody answered.
    public static func durationSeconds(of call: CallRecord) -> Int {
        guard let answered = call.answeredAt, let ended = call.endedAt else { return 0 }
        return max(0, Int(ended.timeIntervalSince(answered).rounded(.down)))
    }

    /// The record of an ended call for its conversation, or nil (see ``outcome(of:)``).
    public static func summary(of call: CallRecord) -> CallSummary? {
        outcome(of: call).map {
            CallSummary(callId: call.id, mode: call.mode, outcome: $0, durationSeconds: durationSeconds(of: call))
        }
    }

    /// The message's plain text, for clients that do not know `call` messages: "Missed audio
    /// call", "Video call · 3:12".
    public static func text(of summary: CallSummary) -> String {
        let mode = summary.mode == .video ? "video call" : "audio call"
        switch summary.outcome {
        case .answered: return "\(mode.prefix(1).uppercased())\(mode.dropFirst()) · \(clock(summary.durationSeconds))"
        case .missed: return "Missed \(mode)"
        case .declined: return "Declined \(mode)"
        case .cancelled: return "Cancelled \(mode)"
        case .busy: return "\(mode.prefix(1).uppercased())\(mode.dropFirst()) · busy"
        case .unknown: return "\(mode.prefix(1).uppercased())\(mode.dropFirst())"
        }
    }

    /// `m:ss`, or `h:mm:ss` from an hour.
    public static func clock(_ seconds: Int) -> String {
        let hours = seconds / 3600, minutes = seconds / 60 % 60, rest = seconds % 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(minutes):\(two(rest))"
    }
}
