import Foundation
import SwitchboardWire

/// What reaches one person's phones for one call: a ring, a quiet notice, or nothing. Ordered,
/// so two reasons combine by taking the quieter (``min``).
public enum RingDecision: Int, Sendable, Comparable, CaseIterable {
    case off = 0
    case notify = 1
    case ring = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A person's ``PushPreferences`` checked and read for deciding: times parsed, the time zone
/// found, the days as weekdays. Pure: the moment and the caller are inputs.
public struct RingPolicy: Sendable, Equatable {
    public let preferences: PushPreferences
    let until: Date?
    let zone: TimeZone?
    let rules: [Rule]
    let favourites: Set<String>

    /// A rule of the week: Gregorian weekdays (1 is Sunday) and minutes since local midnight.
    struct Rule: Sendable, Equatable {
        let weekdays: Set<Int>
        let start: Int
        let end: Int
    }

    /// Why preferences were refused: the field (`calls`, `until`, `quietHours.timeZone`,
    /// `quietHours.rules[1].start`, `alwaysRing[0]`, …) and what is wrong with it.
    public struct Problem: Error, Sendable, Equatable {
        public let field: String
        public let message: String
    }

    /// The days a rule names, in order.
    public static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    /// At most this many quiet-hours rules and favourites.
    public static let maxRules = 28
    public static let maxFavourites = 200

    /// Checks `preferences`; a value this version does not know is a problem, never a default.
    public init(_ preferences: PushPreferences) throws(Problem) {
        guard preferences.calls.isKnown else {
            throw Problem(field: "calls", message: "'calls' must be 'ring', 'notify' or 'off'")
        }
        if let text = preferences.until {
            // Stored and answered as RFC 3339 UTC, whose years have four digits.
            guard let date = Timestamp.date(text), Timestamp.iso8601(date).utf8.count == 24 else {
                throw Problem(
                    field: "until", message: "'until' must be an ISO-8601 time up to 9999-12-31 UTC, or null")
            }
            until = date
        } else {
            until = nil
        }
        var rules: [Rule] = []
        if let quiet = preferences.quietHours {
            guard let zone = TimeZone(identifier: quiet.timeZone),
                quiet.timeZone.contains("/") || quiet.timeZone == "UTC"
            else {
                throw Problem(
                    field: "quietHours.timeZone",
                    message: "'quietHours.timeZone' must be an IANA time zone name like 'Europe/Berlin'")
            }
            self.zone = zone
            guard (1...Self.maxRules).contains(quiet.rules.count) else {
                throw Problem(
                    field: "quietHours.rules", message: "'quietHours.rules' must hold 1 to \(Self.maxRules) rules")
            }
            for (index, rule) in quiet.rules.enumerated() {
                let field = "quietHours.rules[\(index)]"
                let weekdays = rule.days.compactMap { Self.dayNames.firstIndex(of: $0).map { $0 + 1 } }
                guard !rule.days.isEmpty, weekdays.count == rule.days.count, Set(weekdays).count == weekdays.count
                else {
                    throw Problem(
                        field: field + ".days",
                        message: "'\(field).days' must name each day at most once, as mon, tue, wed, thu, fri, sat, sun"
                    )
                }
                guard let start = Self.minutes(rule.start) else {
                    throw Problem(field: field + ".start", message: "'\(field).start' must be a time like 22:00")
                }
                guard let end = Self.minutes(rule.end) else {
                    throw Problem(field: field + ".end", message: "'\(field).end' must be a time like 07:30")
                }
                guard start != end else {
                    throw Problem(field: field + ".end", message: "'\(field).end' must differ from its start")
                }
                rules.append(Rule(weekdays: Set(weekdays), start: start, end: end))
            }
        } else {
            zone = nil
        }
        guard preferences.alwaysRing.count <= Self.maxFavourites else {
            throw Problem(field: "alwaysRing", message: "'alwaysRing' holds at most \(Self.maxFavourites) user ids")
        }
        for (index, id) in preferences.alwaysRing.enumerated() where !Self.isUserID(id) {
            throw Problem(
                field: "alwaysRing[\(index)]",
                message:
                    "'alwaysRing[\(index)]' must be a user id: 1 to 128 printable ASCII characters, no spaces or '/'")
        }
        self.rules = rules
        let ids = Set(preferences.alwaysRing.map(Self.normalized))
        favourites = ids
        var normalized = preferences
        normalized.alwaysRing = ids.sorted()
        normalized.until = until.map(Timestamp.iso8601)
        self.preferences = normalized
    }

    /// Every call rings.
    public static let ringAlways = try! RingPolicy(.defaults)

    /// What a call from `callerID` does at `now`: a favourite always rings; otherwise `calls`
    /// (back to `ring` once a snooze's `until` has passed), and during quiet hours no more
    /// than a notice.
    public func decision(forCaller callerID: String, at now: Date) -> RingDecision {
        if favourites.contains(Self.normalized(callerID)) { return .ring }
        var decision: RingDecision
        if let until, now >= until {
            decision = .ring
        } else {
            switch preferences.calls {
            case .notify: decision = .notify
            case .off: decision = .off
            default: decision = .ring
            }
        }
        if isQuiet(at: now) { decision = min(decision, .notify) }
        return decision
    }

    /// Whether `now` falls in a quiet-hours rule, read in the person's time zone. A rule past
    /// midnight is quiet from its start on its day to its end on the next.
    public func isQuiet(at now: Date) -> Bool {
        guard let zone, !rules.isEmpty else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: now)
        guard let weekday = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return false }
        let minutes = hour * 60 + minute
        let yesterday = weekday == 1 ? 7 : weekday - 1
        return rules.contains { rule in
            if rule.start < rule.end {
                return rule.weekdays.contains(weekday) && minutes >= rule.start && minutes < rule.end
            }
            return (rule.weekdays.contains(weekday) && minutes >= rule.start)
                || (rule.weekdays.contains(yesterday) && minutes < rule.end)
        }
    }

    /// An account's id (a UUID) or a push-gateway app's user id: 1 to 128 printable ASCII
    /// characters without spaces or `/`.
    static func isUserID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { (33...126).contains($0) && $0 != 47 }
    }

    /// A UUID in lower case (accounts' ids, in any case), anything else as it is.
    static func normalized(_ id: String) -> String { UUID(uuidString: id) != nil ? id.lowercased() : id }

    /// `HH:MM` (00:00 to 23:59) as minutes since midnight.
    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        return hour * 60 + minute
    }
}
