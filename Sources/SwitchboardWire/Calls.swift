/// `POST /calls` body.
public struct CreateCall: Codable, Sendable, Equatable {
    public var scopeKind: ScopeKind
    /// The conversation's or group's id.
    public var scopeId: String
    public var mode: CallMode
    /// A UUID chosen by the caller: the same request again returns the same call.
    public var clientId: String
    /// Whose phones ring: every invitee (absent, the default), none, or only the listed
    /// members; the others get a quiet notice and can answer (join) all the same.
    public var ring: CallRing?

    public init(scopeKind: ScopeKind, scopeId: String, mode: CallMode, clientId: String, ring: CallRing? = nil) {
        self.scopeKind = scopeKind
        self.scopeId = scopeId
        self.mode = mode
        self.clientId = clientId
        self.ring = ring
    }
}

/// Whose phones a new call rings: `"all"`, `"none"`, or a list of member ids.
public enum CallRing: Codable, Sendable, Equatable {
    case all
    case none
    case only([String])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let word = try? container.decode(String.self) {
            switch word {
            case "all": self = .all
            case "none": self = .none
            default:
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'ring' must be \"all\", \"none\" or a list of member ids")
            }
        } else {
            self = .only(try container.decode([String].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .all: try container.encode("all")
        case .none: try container.encode("none")
        case .only(let ids): try container.encode(ids)
        }
    }
}

/// An invitee's answer, as clients see it.
public struct CallInvitationInfo: Codable, Sendable, Equatable {
    public var userId: String
    public var state: InvitationState
    public var updatedAt: String

    public init(userId: String, state: InvitationState, updatedAt: String) {
        self.userId = userId
        self.state = state
        self.updatedAt = updatedAt
    }
}

/// A user in the call's media session.
public struct CallParticipantInfo: Codable, Sendable, Equatable {
    public var userId: String
    public var joinedAt: String
    /// `null` while they are in the call.
    public var leftAt: String?

    public init(userId: String, joinedAt: String, leftAt: String?) {
        self.userId = userId
        self.joinedAt = joinedAt
        self.leftAt = leftAt
    }

    enum CodingKeys: String, CodingKey { case userId, joinedAt, leftAt }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(joinedAt, forKey: .joinedAt)
        try container.encode(leftAt, forKey: .leftAt)
    }
}

/// A call as every endpoint shows it. It never carries the media room's name or the
/// caller's `clientId`.
public struct CallInfo: Codable, Sendable, Equatable {
    public var id: String
    public var scopeKind: ScopeKind
    public var scopeId: String
    public var mode: CallMode
    public var state: CallState
    /// `null` until ended.
    public var endReason: EndReason?
    public var createdBy: String
    public var createdAt: String
    public var answeredAt: String?
    public var endedAt: String?
    public var invitations: [CallInvitationInfo]
    public var participants: [CallParticipantInfo]

    public init(
        id: String, scopeKind: ScopeKind, scopeId: String, mode: CallMode, state: CallState, endReason: EndReason?,
        createdBy: String,
        createdAt: String, answeredAt: String?, endedAt: String?, invitations: [CallInvitationInfo],
        participants: [CallParticipantInfo]
    ) {
        self.id = id
        self.scopeKind = scopeKind
        self.scopeId = scopeId
        self.mode = mode
        self.state = state
        self.endReason = endReason
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.answeredAt = answeredAt
        self.endedAt = endedAt
        self.invitations = invitations
        self.participants = participants
    }

    enum CodingKeys: String, CodingKey {
        case id, scopeKind, scopeId, mode, state, endReason, createdBy, createdAt, answeredAt, endedAt, invitations,
            participants
    }

    /// Writes `null` for what does not apply yet.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(scopeKind, forKey: .scopeKind)
        try container.encode(scopeId, forKey: .scopeId)
        try container.encode(mode, forKey: .mode)
        try container.encode(state, forKey: .state)
        try container.encode(endReason, forKey: .endReason)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(answeredAt, forKey: .answeredAt)
        try container.encode(endedAt, forKey: .endedAt)
        try container.encode(invitations, forKey: .invitations)
        try container.encode(participants, forKey: .participants)
    }
}

/// `POST /calls/{id}/media-token` answer: where and how to join the media room.
public struct MediaToken: Codable, Sendable, Equatable {
    /// The media server's URL (`wss://…`).
    public var url: String
    /// A LiveKit access token (HS256 JWT) valid for 30 seconds, for this call's room only.
    public var token: String
    public var expiresAt: String

    public init(url: String, token: String, expiresAt: String) {
        self.url = url
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// The optional body of `POST /calls/{id}/accept` and `/join`: `{"mediaToken": true}` asks for
/// the media token in the same answer (one round trip less on the way to audio).
public struct AnswerOptions: Codable, Sendable, Equatable {
    public var mediaToken: Bool?
    /// Join only: a pre-authorisation (``CallPreauthorization``) of the scheduled call this call
    /// started. Still valid for this user and call, it is used up and the answer carries the
    /// media token as `mediaToken: true` would; otherwise the join goes on without it.
    public var preauthorization: String?

    public init(mediaToken: Bool? = nil, preauthorization: String? = nil) {
        self.mediaToken = mediaToken
        self.preauthorization = preauthorization
    }
}

/// An answer to accept or join: the call, and the media token when it was asked for
/// (`media` beside the call's own fields).
public struct CallWithMedia: Decodable, Sendable, Equatable {
    public var call: CallInfo
    public var media: MediaToken?

    public init(call: CallInfo, media: MediaToken?) {
        self.call = call
        self.media = media
    }

    private enum CodingKeys: String, CodingKey { case media }

    public init(from decoder: any Decoder) throws {
        call = try CallInfo(from: decoder)
        media = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(MediaToken.self, forKey: .media)
    }
}
