import Foundation
import Testing
import SwitchboardCore
import SwitchboardWire

/// A person's do not disturb, snooze, quiet hours and favourites, decided on given moments.
@Suite("Ring policy: do not disturb, snooze, quiet hours, favourites", .timeLimit(.minutes(1)))
struct RingPolicyTests {
    static let friend = "0d6c1f0e-9a51-4b7e-8d7e-2f6f2d0c1a11"
    static let stranger = "7b1e3c52-5d4f-4e0b-9c61-0a2b3c4d5e6f"

    /// A moment given as local wall-clock time in `zone`.
    static func at(_ text: String, in zone: String) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let parts = text.split(whereSeparator: { "- :".contains($0) }).map { Int($0)! }
        return calendar.date(
            from: DateComponents(year: parts[0], month: parts[1], day: parts[2], hour: parts[3], minute: parts[4]))!
    }

    @Test func nothingSaidRingsEveryCall() {
        #expect(RingPolicy.ringAlways.decision(forCaller: Self.stranger, at: Date()) == .ring)
    }

    /// A snooze holds until its moment, then calls ring again; one already over is ignored.
    @Test func aSnoozeEndsAtItsMoment() throws {
        let until = Date(timeIntervalSince1970: 1_900_000_000)
        let snoozed = try RingPolicy(PushPreferences(calls: .off, until: Timestamp.iso8601(until)))
        #expect(snoozed.decision(forCaller: Self.stranger, at: until.addingTimeInterval(-1)) == .off)
        #expect(snoozed.decision(forCaller: Self.stranger, at: until) == .ring)
        #expect(snoozed.decision(forCaller: Self.stranger, at: until.addingTimeInterval(3600)) == .ring)
        let quiet = try RingPolicy(PushPreferences(calls: .notify))
        #expect(quiet.decision(forCaller: Self.stranger, at: until) == .notify, "without until: for good")
    }

    /// 22:00–07:00 every weekday night in Berlin: quiet from Monday 22:00 to Tuesday 07:00, and
    /// Friday night into Saturday morning, but not Saturday night.
    @Test func quietHoursRunPastMidnightInThePersonsTimeZone() throws {
        let zone = "Europe/Berlin"
        let policy = try RingPolicy(
            PushPreferences(
                quietHours: QuietHours(
                    timeZone: zone,
                    rules: [QuietHoursRule(days: ["mon", "tue", "wed", "thu", "fri"], start: "22:00", end: "07:00")])))
        // 2026-12-07 is a Monday.
        let cases: [(String, RingDecision)] = [
            ("2026-12-07 21:59", .ring), ("2026-12-07 22:00", .notify), ("2026-12-08 03:30", .notify),
            ("2026-12-08 06:59", .notify), ("2026-12-08 07:00", .ring), ("2026-12-11 23:00", .notify),
            ("2026-12-12 06:00", .notify), ("2026-12-12 23:00", .ring), ("2026-12-13 03:00", .ring),
            ("2026-12-07 03:00", .ring),
        ]
        for (moment, expected) in cases {
            #expect(policy.decision(forCaller: Self.stranger, at: Self.at(moment, in: zone)) == expected, "\(moment)")
        }
    }

    /// The same instant is quiet or not depending on the zone the person lives in, and a
    /// person who moves changes only the zone.
    @Test func aTimeZoneChangeMovesTheQuietHours() throws {
        let rules = [QuietHoursRule(days: RingPolicy.dayNames, start: "23:00", end: "06:00")]
        let berlin = try RingPolicy(PushPreferences(quietHours: QuietHours(timeZone: "Europe/Berlin", rules: rules)))
        let tokyo = try RingPolicy(PushPreferences(quietHours: QuietHours(timeZone: "Asia/Tokyo", rules: rules)))
        // 23:30 in Berlin is 07:30 the next morning in Tokyo.
        let instant = Self.at("2026-12-07 23:30", in: "Europe/Berlin")
        #expect(berlin.isQuiet(at: instant) && !tokyo.isQuiet(at: instant))
        // Across a change to summer time the rule stays on the local clock.
        let summer = Self.at("2027-03-28 23:30", in: "Europe/Berlin")
        #expect(berlin.isQuiet(at: summer))
        #expect(!berlin.isQuiet(at: Self.at("2027-03-28 22:59", in: "Europe/Berlin")))
    }

    /// Quiet hours turn a ring into a notice, never louder: off stays off.
    @Test func quietHoursOnlyQuieten() throws {
        let zone = "Asia/Shanghai"
        let rules = [QuietHoursRule(days: RingPolicy.dayNames, start: "00:00", end: "23:59")]
        let off = try RingPolicy(PushPreferences(calls: .off, quietHours: QuietHours(timeZone: zone, rules: rules)))
        #expect(off.decision(forCaller: Self.stranger, at: Self.at("2026-12-07 12:00", in: zone)) == .off)
    }

    /// A favourite rings through everything: off, a snooze, quiet hours.
    @Test func favouritesAlwaysRing() throws {
        let zone = "America/New_York"
        let policy = try RingPolicy(
            PushPreferences(
                calls: .off, until: "2099-01-01T00:00:00.000Z",
                quietHours: QuietHours(
                    timeZone: zone, rules: [QuietHoursRule(days: RingPolicy.dayNames, start: "00:00", end: "23:59")]),
                alwaysRing: [Self.friend.uppercased()]))
        let noon = Self.at("2026-12-07 12:00", in: zone)
        #expect(policy.decision(forCaller: Self.friend, at: noon) == .ring)
        #expect(policy.decision(forCaller: Self.stranger, at: noon) == .off)
        #expect(policy.preferences.alwaysRing == [Self.friend], "kept lowercased, once")
    }

    @Test(
        arguments: [
            (PushPreferences(calls: .unknown("loud")), "calls"),
            (PushPreferences(until: "tomorrow"), "until"),
            (PushPreferences(until: "9999-12-31T23:00:00-05:00"), "until"),
            (PushPreferences(quietHours: QuietHours(timeZone: "Mars/Olympus", rules: [rule()])), "quietHours.timeZone"),
            (PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [])), "quietHours.rules"),
            (
                PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(days: [])])),
                "quietHours.rules[0].days"
            ),
            (
                PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(days: ["mon", "mon"])])),
                "quietHours.rules[0].days"
            ),
            (
                PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(days: ["monday"])])),
                "quietHours.rules[0].days"
            ),
            (
                PushPreferences(
                    quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(), rule(start: "24:00")])),
                "quietHours.rules[1].start"
            ),
            (
                PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(end: "7:00")])),
                "quietHours.rules[0].end"
            ),
            (
                PushPreferences(quietHours: QuietHours(timeZone: "Europe/Paris", rules: [rule(start: "07:00")])),
                "quietHours.rules[0].end"
            ),
            (PushPreferences(alwaysRing: ["not an id"]), "alwaysRing[0]"),
        ])
    func badPreferencesNameTheirField(preferences: PushPreferences, field: String) {
        #expect(throws: RingPolicy.Problem.self) { try RingPolicy(preferences) }
        do {
            _ = try RingPolicy(preferences)
        } catch {
            #expect(error.field == field)
        }
    }
}

private func rule(days: [String] = ["mon"], start: String = "22:00", end: String = "07:00") -> QuietHoursRule {
    QuietHoursRule(days: days, start: start, end: end)
}
