/// How calls reach a person's phones (`GET`/`PUT /me/push-preferences`): `ring` rings them,
/// `notify` shows a quiet notice instead, `off` sends nothing. A call to someone not rung is
/// still a call: online clients see it on the event stream, it ends `missed` when the ring
/// times out, and the caller sees nothing different.
public enum CallPushMode: WireEnum {
    case ring
    case notify
    case off
    case unknown(String)

    public static let known: [CallPushMode] = [.ring, .notify, .off]

    public var rawValue: String {
        switch self {
        case .ring: "ring"
        case .notify: "notify"
        case .off: "off"
        case .unknown(let value): value
        }
    }
}

/// A person's say over their phones, kept on the server so it follows them across devices and
/// phone makers.
public struct PushPreferences: Codable, Sendable, Equatable {
    /// How calls reach them.
    public var calls: CallPushMode
    /// A snooze: `calls` holds until this moment (ISO-8601), then calls ring again; null: for
    /// good. A moment in the past is ignored.
    public var until: String?
    /// When calls that would ring only notify, by the week in the person's own time zone.
    public var quietHours: QuietHours?
    /// User ids whose calls always ring, whatever the rest says (favourites).
    public var alwaysRing: [String]

    public init(
        calls: CallPushMode = .ring, until: String? = nil, quietHours: QuietHours? = nil, alwaysRing: [String] = []
    ) {
        self.calls = calls
        self.until = until
        self.quietHours = quietHours
        self.alwaysRing = alwaysRing
    }

    /// What a person who never said anything has: every call rings.
    public static let defaults = PushPreferences()
}

/// A weekly quiet-hours schedule.
public struct QuietHours: Codable, Sendable, Equatable {
    /// An IANA time zone name (`Europe/Berlin`, `Asia/Shanghai`).
    public var timeZone: String
    public var rules: [QuietHoursRule]

    public init(timeZone: String, rules: [QuietHoursRule]) {
        self.timeZone = timeZone
        self.rules = rules
    }
}

/// Quiet from `start` to `end` (`HH:MM`, local time) on each of `days` (`mon` … `sun`). A rule
/// whose end is before its start runs past midnight into the next day.
public struct QuietHoursRule: Codable, Sendable, Equatable {
    public var days: [String]
    public var start: String
    public var end: String

    public init(days: [String], start: String, end: String) {
        self.days = days
        self.start = start
        self.end = end
    }
}
