/// What a webhook event tells the app's own server about.
public enum WebhookEventType: WireEnum {
    /// A call was created and rings its invitees.
    case callRinging
    /// The first invitee answered: the call is active.
    case callAnswered
    /// The call ended (`data.outcome`, `data.durationSeconds`, the call's end reason and its
    /// participants with their join and leave times).
    case callEnded
    /// One invitee's ring ended unanswered (timed out, or the caller hung up first).
    case callMissed
    /// One invitee declined.
    case callDeclined
    /// A push to one of a user's devices failed for good; `data.removed` says whether its token was removed.
    case pushFailed
    /// Every push of a gateway signal reached its outcome.
    case gatewaySignalFinished
    case unknown(String)

    public static let known: [WebhookEventType] = [
        .callRinging, .callAnswered, .callEnded, .callMissed, .callDeclined, .pushFailed, .gatewaySignalFinished,
    ]

    public var rawValue: String {
        switch self {
        case .callRinging: "call.ringing"
        case .callAnswered: "call.answered"
        case .callEnded: "call.ended"
        case .callMissed: "call.missed"
        case .callDeclined: "call.declined"
        case .pushFailed: "push.failed"
        case .gatewaySignalFinished: "gateway.signal.finished"
        case .unknown(let value): value
        }
    }
}

/// A webhook delivery's body: `{"id", "type", "createdAt", "data"}`. The id is the event's, the
/// same on every attempt and resend (the receiver's idempotency key).
public struct WebhookEvent<Payload: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var id: String
    public var type: WebhookEventType
    public var createdAt: String
    public var data: Payload

    public init(id: String, type: WebhookEventType, createdAt: String, data: Payload) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.data = data
    }
}

/// The `data` of the `call.*` events.
public struct CallEventData: Codable, Sendable, Equatable {
    /// The call as `GET /calls/{id}` shows it after the change (participants with their join and leave times).
    public var call: CallInfo
    /// `call.missed`, `call.declined`: the invitee.
    public var userId: String?
    /// `call.ended`: how it ended for its conversation (`null` when a social change ended it: unfriended, blocked, dissolved).
    public var outcome: CallOutcome?
    /// `call.ended`: whole seconds from the first answer to the end; 0 when nobody answered.
    public var durationSeconds: Int?

    public init(call: CallInfo, userId: String? = nil, outcome: CallOutcome? = nil, durationSeconds: Int? = nil) {
        self.call = call
        self.userId = userId
        self.outcome = outcome
        self.durationSeconds = durationSeconds
    }

    enum CodingKeys: String, CodingKey { case call, userId, outcome, durationSeconds }

    /// Writes `null` for what does not apply, so every event of a type has the same members.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(call, forKey: .call)
        try container.encode(userId, forKey: .userId)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(durationSeconds, forKey: .durationSeconds)
    }
}

/// The `data` of `push.failed`.
public struct PushFailedData: Codable, Sendable, Equatable {
    public var userId: String
    public var deviceId: String
    /// The channel (token kind): `ios-voip`, `fcm`, `xiaomi` …
    public var channel: String
    /// The last 8 characters of the token.
    public var tokenSuffix: String
    public var callId: String
    /// The push service's reason (`Unregistered`, `BadDeviceToken`, `UNREGISTERED` …).
    public var reason: String
    /// Whether the token was removed (the service said it is dead): the device is not rung again until its app registers anew.
    public var removed: Bool

    public init(
        userId: String, deviceId: String, channel: String, tokenSuffix: String, callId: String, reason: String,
        removed: Bool
    ) {
        self.userId = userId
        self.deviceId = deviceId
        self.channel = channel
        self.tokenSuffix = tokenSuffix
        self.callId = callId
        self.reason = reason
        self.removed = removed
    }
}
