/// A group call planned for a start time (a meeting): shown to the group's members, announced
/// by `scheduled_call_changed`, and joinable without the media-token round trip through a
/// pre-authorisation.
public struct ScheduledCall: Codable, Sendable, Equatable {
    public var id: String
    public var groupId: String
    public var title: String?
    public var mode: CallMode
    /// ISO-8601 UTC with milliseconds.
    public var startsAt: String
    public var createdBy: String
    public var createdAt: String
    /// The group call that started it (the first group call created from 30 minutes before
    /// its start time on), or nil before.
    public var callId: String?

    public init(
        id: String, groupId: String, title: String?, mode: CallMode, startsAt: String, createdBy: String,
        createdAt: String, callId: String?
    ) {
        self.id = id
        self.groupId = groupId
        self.title = title
        self.mode = mode
        self.startsAt = startsAt
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.callId = callId
    }

    private enum CodingKeys: String, CodingKey { case id, groupId, title, mode, startsAt, createdBy, createdAt, callId }

    /// Every key is written, `title` and `callId` as null when there is none.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(title, forKey: .title)
        try container.encode(mode, forKey: .mode)
        try container.encode(startsAt, forKey: .startsAt)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(callId, forKey: .callId)
    }
}

/// `POST /groups/{id}/scheduled-calls`.
public struct ScheduleCall: Codable, Sendable, Equatable {
    /// ISO-8601 with a time zone; in the future, at most a year ahead.
    public var startsAt: String
    public var mode: CallMode
    /// 1 to 100 characters, or nil.
    public var title: String?

    public init(startsAt: String, mode: CallMode, title: String? = nil) {
        self.startsAt = startsAt
        self.mode = mode
        self.title = title
    }
}

/// `GET /scheduled-calls` and `GET /groups/{id}/scheduled-calls`: ascending by start time.
public struct ScheduledCallList: Codable, Sendable, Equatable {
    public var scheduledCalls: [ScheduledCall]

    public init(scheduledCalls: [ScheduledCall]) { self.scheduledCalls = scheduledCalls }
}

/// `POST /scheduled-calls/{id}/preauthorization`: a single-use capability, bound to the user and
/// the scheduled call, that `POST /calls/{id}/join` redeems for the media token in its answer.
public struct CallPreauthorization: Codable, Sendable, Equatable {
    public var token: String
    public var scheduledCallId: String
    /// Ten minutes after it was issued.
    public var expiresAt: String

    public init(token: String, scheduledCallId: String, expiresAt: String) {
        self.token = token
        self.scheduledCallId = scheduledCallId
        self.expiresAt = expiresAt
    }
}

/// `POST /calls/{id}/join` body (optional): ``AnswerOptions`` with its `preauthorization`.
/// With a pre-authorisation still valid for this user and this call, the answer carries
/// `media` (as `accept?mediaToken=true` does); with one that expired, was used, or is for
/// another user or call, the join goes on without it and the answer has no `media`.
public typealias JoinCall = AnswerOptions
