import Foundation
import SwitchboardWire

/// An invitee of a call.
public struct CallInvitation: Sendable, Equatable {
    public var userID: String
    public var state: InvitationState
    public var updatedAt: Date

    public init(userID: String, state: InvitationState, updatedAt: Date) {
        self.userID = userID
        self.state = state
        self.updatedAt = updatedAt
    }
}

/// A user in the call's media session.
public struct CallParticipant: Sendable, Equatable {
    public var userID: String
    public var joinedAt: Date
    /// When they left; `nil` while they are in the call.
    public var leftAt: Date?

    public init(userID: String, joinedAt: Date, leftAt: Date? = nil) {
        self.userID = userID
        self.joinedAt = joinedAt
        self.leftAt = leftAt
    }

    /// Whether they are in the call now.
    public var isPresent: Bool { leftAt == nil }
}

/// A call, as the state machine sees it: the whole truth about one call.
public struct CallRecord: Sendable, Equatable {
    public var id: String
    public var scopeKind: ScopeKind
    public var scopeID: String
    public var mode: CallMode
    public var state: CallState
    public var endReason: CallInfo.EndReason?
    public var createdBy: String
    public var createdAt: Date
    public var answeredAt: Date?
    public var endedAt: Date?
    /// When ringing invitations time out.
    public var ringDeadline: Date
    /// The media room's name; never shown to clients.
    public var roomName: String
    /// Since when the media room has been seen empty (the watchdog's memory).
    public var emptySince: Date?
    public var invitations: [CallInvitation]
    public var participants: [CallParticipant]

    public init(
        id: String, scopeKind: ScopeKind, scopeID: String, mode: CallMode, state: CallState,
        endReason: CallInfo.EndReason?,
        createdBy: String, createdAt: Date, answeredAt: Date?, endedAt: Date?, ringDeadline: Date, roomName: String,
        emptySince: Date?, invitations: [CallInvitation], participants: [CallParticipant]
    ) {
        self.id = id
        self.scopeKind = scopeKind
        self.scopeID = scopeID
        self.mode = mode
        self.state = state
        self.endReason = endReason
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.answeredAt = answeredAt
        self.endedAt = endedAt
        self.ringDeadline = ringDeadline
        self.roomName = roomName
        self.emptySince = emptySince
        self.invitations = invitations
        self.participants = participants
    }

    /// Everyone the call concerns: the caller, every invitee, and anyone who joined without an
    /// invitation (a member added to the group after the call started). In that order, once each.
    public var involvedUserIDs: [String] {
        var seen = Set<String>()
        return ([createdBy] + invitations.map(\.userID) + participants.map(\.userID)).filter {
            seen.insert($0).inserted
        }
    }

    /// Users in the media session now.
    public var presentUserIDs: [String] { participants.filter(\.isPresent).map(\.userID) }

    /// Invitees whose invitation still rings.
    public var ringingUserIDs: [String] { invitations.filter { $0.state == .ringing }.map(\.userID) }

    /// Whether `userID` is in this call as caller or participant while it rings or is active:
    /// the meaning of "busy" for new calls.
    public func occupies(_ userID: String) -> Bool {
        switch state {
        case .ended: false
        case .ringing: userID == createdBy
        case .active: participants.contains { $0.userID == userID && $0.isPresent }
        // Never stored: a state the store cannot read is an error there.
        case .unknown: false
        }
    }
}

/// Something the media backend must do before a transition is committed.
public enum MediaAction: Sendable, Equatable {
    /// Close the room and disconnect everyone in it (idempotent).
    case deleteRoom(String)
    /// Disconnect one participant from the room (idempotent).
    case removeParticipant(room: String, identity: String)
}

/// What a transition asks the caller to do, besides storing the new record.
public struct CallEffects: Sendable, Equatable {
    /// Users to write a `call_changed` event for (in the same transaction).
    public var notify: [String]
    /// Invitees to ring with a VoIP push (new ringing invitations).
    public var ring: [String]
    /// Media work to do before committing; a failure leaves everything unchanged.
    public var media: [MediaAction]

    public init(notify: [String] = [], ring: [String] = [], media: [MediaAction] = []) {
        self.notify = notify
        self.ring = ring
        self.media = media
    }
}

/// A transition the rules refuse. The server answers each with its code of the API's error
/// catalogue (`ErrorCode`, in the wire layer) and this message.
public enum CallTransitionError: Error, Sendable, Equatable {
    /// The user is not part of this call (404: they cannot see it).
    case notInvolved
    /// Only the caller can do this (403).
    case notCaller
    /// The user has no invitation, or it no longer rings (409).
    case invitationNotRinging
    /// The call has ended (409).
    case callEnded
    /// Cancel needs a ringing call (409).
    case callNotRinging
    /// Join needs an active call (409).
    case callNotActive
    /// Only group calls can be joined (409).
    case notJoinable
    /// The user is not in the media session (409).
    case notParticipant
    /// The user is already in it (409).
    case alreadyParticipant
    /// The user is in another ringing or active call (409).
    case busy
    /// Not a member of the call's group (403).
    case notMember

    /// A human-readable explanation.
    public var message: String {
        switch self {
        case .notInvolved: "no such call"
        case .notCaller: "only the caller can do this"
        case .notMember: "only members of the group can join its call"
        case .invitationNotRinging: "you have no ringing invitation to this call"
        case .callEnded: "the call has ended"
        case .callNotRinging: "the call is no longer ringing"
        case .callNotActive: "the call is not active"
        case .notJoinable: "only group calls can be joined"
        case .notParticipant: "you are not in this call"
        case .alreadyParticipant: "you are already in this call"
        case .busy: "you are already in another call"
        }
    }
}
