import Foundation

/// Decides which meetings (scheduled group calls) to hold a pre-authorisation for, which held
/// ones to forget, and when to look again: a pure policy, no I/O and no clock of its own.
///
/// The rules, with the defaults of ``Configuration``:
/// 1. **Candidates** are the next `count` (3) meetings by start time (then id) among those
///    that did not start `runningWindow` (1 h, the server's) or more ago, did not end (the
///    server answered `SCHEDULED_CALL_ENDED`) and were not joined with a pre-authorisation on
///    this device already (``Input/used``). Meetings further out wait their turn.
/// 2. A held pre-authorisation is **good** when it is still valid more than `margin` (60 s)
///    after the later of now and the meeting's start: one issued `lead` (8 min) before the
///    start (valid 10 min) is good through the start and the first minute of the meeting.
/// 3. A candidate is **due** from `lead` before its start. A due candidate without a good
///    pre-authorisation gets one **requested** now: the first at `start − lead`; a
///    replacement when the held one would expire before `start + margin`, or — the meeting
///    under way — within `margin` of now, so one stays valid for as long as it may run.
///    Not when a request for it failed less than `retryInterval` (30 s) ago: it is asked again
///    then.
/// 4. A held pre-authorisation is **dropped** when it expired, or its meeting is no longer a
///    candidate (cancelled or gone from the list, ended, used, started `runningWindow` ago, or
///    pushed out of the next `count` by a meeting scheduled earlier). A replacement being
///    asked for is not dropped: the held one is still good until it expires.
/// 5. **Wake** at the earliest moment after now when rule 3 or 4 can change its answer: a
///    candidate's `start − lead`, a good pre-authorisation's `expiry − margin`, a failed
///    request's retry time, a held one's expiry, a candidate's `start + runningWindow`. A
///    requested one brings its own wake once its answer is fed back and the plan made again.
///
/// ```swift
/// let plan = MeetingPreloadPlanner().plan(.init(now: clock.now, meetings: meetings, held: held))
/// for id in plan.request { … } ; for id in plan.drop { … } ; schedule(at: plan.wake)
/// ```
public struct MeetingPreloadPlanner: Sendable, Equatable {
    /// The policy's times, in seconds, and how many meetings it looks ahead.
    public struct Configuration: Sendable, Equatable {
        /// A pre-authorisation is first asked for this long before its meeting's start; less
        /// than its 10 min validity, so it is still valid at the start.
        public var lead: Double
        /// A held pre-authorisation is replaced this long before it would no longer cover the
        /// start (or, the meeting under way, now).
        public var margin: Double
        /// A meeting is looked after until this long after its start (the server lists it as long).
        public var runningWindow: Double
        /// How many of the next meetings are looked after.
        public var count: Int
        /// A failed request for a meeting is made again after this long.
        public var retryInterval: Double

        public init(
            lead: Double = 480, margin: Double = 60, runningWindow: Double = 3600, count: Int = 3,
            retryInterval: Double = 30
        ) {
            precondition(
                lead > margin && margin >= 0 && count >= 1 && retryInterval > 0,
                "MeetingPreloadPlanner: lead > margin ≥ 0, count ≥ 1, retryInterval > 0")
            self.lead = lead
            self.margin = margin
            self.runningWindow = runningWindow
            self.count = count
            self.retryInterval = retryInterval
        }
    }

    /// A scheduled call as the planner sees it.
    public struct Meeting: Sendable, Equatable {
        /// The scheduled call's id.
        public var id: String
        public var groupID: String
        public var startsAt: Date
        /// The group call that started it, once one did.
        public var callID: String?

        public init(id: String, groupID: String, startsAt: Date, callID: String? = nil) {
            self.id = id
            self.groupID = groupID
            self.startsAt = startsAt
            self.callID = callID
        }

        /// The server's scheduled call; nil when its `startsAt` is not an ISO-8601 date-time.
        public init?(_ call: ScheduledCall) {
            guard let start = ISO8601Timestamp.date(from: call.startsAt) else { return nil }
            self.init(id: call.id, groupID: call.groupId, startsAt: start, callID: call.callId)
        }
    }

    /// A pre-authorisation held, by its scheduled call.
    public struct Held: Sendable, Equatable {
        public var scheduledCallID: String
        public var expiresAt: Date

        public init(scheduledCallID: String, expiresAt: Date) {
            self.scheduledCallID = scheduledCallID
            self.expiresAt = expiresAt
        }
    }

    /// What the plan is made from.
    public struct Input: Sendable, Equatable {
        public var now: Date
        /// The upcoming meetings, in any order.
        public var meetings: [Meeting]
        /// The pre-authorisations held (at most one per meeting; a later one wins).
        public var held: [Held]
        /// Meetings joined with a pre-authorisation on this device.
        public var used: Set<String>
        /// Meetings the server said ended (or were cancelled) when asked for one.
        public var ended: Set<String>
        /// The last failed request, by meeting.
        public var failedAt: [String: Date]

        public init(
            now: Date, meetings: [Meeting], held: [Held] = [], used: Set<String> = [], ended: Set<String> = [],
            failedAt: [String: Date] = [:]
        ) {
            self.now = now
            self.meetings = meetings
            self.held = held
            self.used = used
            self.ended = ended
            self.failedAt = failedAt
        }
    }

    /// What to do now.
    public struct Plan: Sendable, Equatable {
        /// Meetings to ask a pre-authorisation for now, soonest first.
        public var request: [String]
        /// Meetings whose held pre-authorisation is to be forgotten, sorted.
        public var drop: [String]
        /// When to make the plan again (strictly after now); nil: nothing will change by itself.
        public var wake: Date?

        public init(request: [String], drop: [String], wake: Date?) {
            self.request = request
            self.drop = drop
            self.wake = wake
        }
    }

    public let configuration: Configuration

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// The next `count` meetings rule 1 looks after, soonest first.
    public func candidates(_ input: Input) -> [Meeting] {
        let now = input.now
        return Array(
            input.meetings
                .filter {
                    !input.ended.contains($0.id) && !input.used.contains($0.id)
                        && $0.startsAt.addingTimeInterval(configuration.runningWindow) > now
                }
                .sorted { ($0.startsAt, $0.id) < ($1.startsAt, $1.id) }
                .prefix(configuration.count))
    }

    /// Applies rules 1–5 to `input`.
    public func plan(_ input: Input) -> Plan {
        let now = input.now
        let candidates = candidates(input)
        let candidateIDs = Set(candidates.map(\.id))
        var held: [String: Date] = [:]
        for entry in input.held { held[entry.scheduledCallID] = entry.expiresAt }

        var drop: [String] = []
        var wakes: [Date] = []
        for (id, expiry) in held {
            if expiry <= now || !candidateIDs.contains(id) {
                drop.append(id)
                held[id] = nil
            } else {
                wakes.append(expiry)
            }
        }

        var request: [String] = []
        for meeting in candidates {
            let start = meeting.startsAt
            wakes.append(start.addingTimeInterval(configuration.runningWindow))
            let due = start.addingTimeInterval(-configuration.lead)
            guard now >= due else {
                wakes.append(due)
                continue
            }
            let covers = max(now, start)
            if let expiry = held[meeting.id], expiry.addingTimeInterval(-configuration.margin) > covers {
                wakes.append(expiry.addingTimeInterval(-configuration.margin))
                continue
            }
            if let failed = input.failedAt[meeting.id], now < failed.addingTimeInterval(configuration.retryInterval) {
                wakes.append(failed.addingTimeInterval(configuration.retryInterval))
                continue
            }
            request.append(meeting.id)
        }
        return Plan(request: request, drop: drop.sorted(), wake: wakes.filter { $0 > now }.min())
    }
}
