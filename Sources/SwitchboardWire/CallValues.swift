/// What a call belongs to: a 1:1 conversation or a group.
public enum ScopeKind: WireEnum {
    case conversation
    case group
    case unknown(String)

    public static let known: [ScopeKind] = [.conversation, .group]

    public var rawValue: String {
        switch self {
        case .conversation: "conversation"
        case .group: "group"
        case .unknown(let value): value
        }
    }
}

/// Audio only, or audio and camera.
public enum CallMode: WireEnum {
    case audio
    case video
    case unknown(String)

    public static let known: [CallMode] = [.audio, .video]

    public var rawValue: String {
        switch self {
        case .audio: "audio"
        case .video: "video"
        case .unknown(let value): value
        }
    }
}

/// The call's life on the server: it rings, becomes active on the first accept, and ends.
public enum CallState: WireEnum {
    case ringing
    case active
    case ended
    case unknown(String)

    public static let known: [CallState] = [.ringing, .active, .ended]

    public var rawValue: String {
        switch self {
        case .ringing: "ringing"
        case .active: "active"
        case .ended: "ended"
        case .unknown(let value): value
        }
    }
}

/// One invitee's answer.
public enum InvitationState: WireEnum {
    case ringing
    case accepted
    case declined
    /// Already in another call.
    case busy
    /// Not answered before the ring timeout.
    case missed
    /// The caller cancelled, or the call ended otherwise while it rang.
    case cancelled
    case unknown(String)

    public static let known: [InvitationState] = [.ringing, .accepted, .declined, .busy, .missed, .cancelled]

    public var rawValue: String {
        switch self {
        case .ringing: "ringing"
        case .accepted: "accepted"
        case .declined: "declined"
        case .busy: "busy"
        case .missed: "missed"
        case .cancelled: "cancelled"
        case .unknown(let value): value
        }
    }
}

extension CallInfo {
    /// Why the server ended a call.
    ///
    /// Nested in `CallInfo` rather than a top-level `CallEndReason`: the SDK's `CallEndReason`
    /// is the call system's (CallKit's) reason, which the SDK derives from this one.
    public enum EndReason: WireEnum {
        /// The (conversation) invitee declined, or every group invitee declined before anyone accepted.
        case declined
        /// The participants hung up.
        case completed
        /// The caller cancelled while it rang.
        case cancelled
        /// Nobody answered before the ring timeout.
        case missed
        /// Every invitee was already in another call.
        case busy
        /// The media room stayed empty past the watchdog's grace.
        case connectionLost
        /// The two stopped being friends.
        case unfriended
        /// One of the two blocked the other.
        case blocked
        /// The group was dissolved.
        case groupDissolved
        case unknown(String)

        public static let known: [EndReason] = [
            .declined, .completed, .cancelled, .missed, .busy, .connectionLost, .unfriended, .blocked, .groupDissolved,
        ]

        public var rawValue: String {
            switch self {
            case .declined: "declined"
            case .completed: "completed"
            case .cancelled: "cancelled"
            case .missed: "missed"
            case .busy: "busy"
            case .connectionLost: "connection_lost"
            case .unfriended: "unfriended"
            case .blocked: "blocked"
            case .groupDissolved: "group_dissolved"
            case .unknown(let value): value
            }
        }
    }
}

/// What a participant asks of a call (`POST /calls/{id}/{action}`). The client chooses it, so
/// the set is closed.
public enum CallAction: String, Sendable, Hashable, CaseIterable {
    /// An invitee answers.
    case accept
    /// An invitee refuses.
    case decline
    /// A group member joins an active group call (after missing or declining it).
    case join
    /// A participant hangs up.
    case leave
    /// The caller withdraws a call that still rings.
    case cancel
}
