import SwitchboardWire

/// The rings a transition ended, for the notices of SPEC §3: every invitation that rang before
/// and no longer does, with what became of it. Pure.
public struct EndedRing: Sendable, Equatable {
    public let userID: String
    /// `accepted`, `declined`, `missed` or `cancelled`.
    public let outcome: InvitationState

    public init(userID: String, outcome: InvitationState) {
        self.userID = userID
        self.outcome = outcome
    }

    /// The notice's `reason`: what the user's other devices are told.
    public var noticeReason: String {
        switch outcome {
        case .accepted: "answered_elsewhere"
        case .declined: "declined_elsewhere"
        case .missed: "missed"
        case .cancelled, .busy, .ringing, .unknown: "cancelled"
        }
    }

    /// Whether the user acted themselves (answered or declined), so the device they acted on
    /// needs no notice.
    public var byTheUser: Bool { outcome == .accepted || outcome == .declined }

    /// The rings that stopped between `before` and `after` (the same call), in invitation order.
    public static func between(_ before: CallRecord, _ after: CallRecord) -> [EndedRing] {
        let ringing = Set(before.invitations.filter { $0.state == .ringing }.map(\.userID))
        return after.invitations.compactMap { invitation in
            guard ringing.contains(invitation.userID), invitation.state != .ringing else { return nil }
            return EndedRing(userID: invitation.userID, outcome: invitation.state)
        }
    }
}
