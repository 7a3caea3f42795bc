/// What the SDK does after a network outage (SPEC §4 rule 12), as a pure state machine: inputs
/// are reachability changes and request outcomes with their times (seconds on any monotonic
/// scale); outputs are actions.
///
/// Rules:
/// - An outage starts at the first moment the device was offline: reachability going away, or
///   a request failing while reachability still says online.
/// - It ends only when a request succeeds. Coming back online does not end it: a network that
///   flaps (offline, a brief online blip that never got a request through, offline again) is
///   one outage, measured from its first moment, so it cannot pass for a short one.
/// - Back online after an outage of less than ``resumeWithin`` (30 s) with a live cursor: resume
///   the feed at once; less than ``rereadWithin`` (5 min): resume and re-read the active calls;
///   otherwise, or without a live cursor, a full snapshot. Exactly 30 s is not "less than 30 s".
/// - An outage that ended without reachability ever saying "back online" (requests failed,
///   then one got through) is planned when that request succeeds, from the moment it was sent.
///
/// ```swift
/// var planner = ReconnectPlanner()
/// _ = planner.networkLost(at: 0)                               // .holdFeed
/// planner.networkRestored(at: 42, cursorLive: true)            // .reconnect(.resumeAndRereadCalls)
/// ```
public struct ReconnectPlanner: Sendable, Equatable {
    /// An outage shorter than this (seconds) only resumes the feed.
    public static let resumeWithin = 30.0
    /// One shorter than this (seconds) also re-reads the active calls; longer: a full snapshot.
    public static let rereadWithin = 300.0

    /// How much to catch up after an outage, weakest first.
    public enum Plan: Int, Sendable, Equatable, Comparable, CaseIterable, CustomStringConvertible {
        /// Poll the event feed again at once, from its cursor.
        case resumeFeed
        /// Resume the feed and re-read the active calls.
        case resumeAndRereadCalls
        /// Re-read `/me` (a new cursor) and the active calls, and let the app refresh its own data.
        case fullSnapshot

        public static func < (lhs: Plan, rhs: Plan) -> Bool { lhs.rawValue < rhs.rawValue }

        /// Whether the active calls are re-read.
        public var rereadsCalls: Bool { self != .resumeFeed }

        public var description: String {
            switch self {
            case .resumeFeed: "resume_feed"
            case .resumeAndRereadCalls: "resume_and_reread_calls"
            case .fullSnapshot: "full_snapshot"
            }
        }
    }

    /// What to do now.
    public enum Action: Sendable, Equatable {
        /// Nothing changes.
        case none
        /// Offline: stop spending requests until the network is back.
        case holdFeed
        /// The network is back: catch up as `plan` says.
        case reconnect(Plan)
    }

    /// When the current outage began; nil while none is going on.
    public private(set) var outageStart: Double?
    /// What reachability last said.
    public private(set) var isOnline = true
    /// The strongest plan given during the current outage (nil: none yet).
    public private(set) var planned: Plan?

    public init() {}

    /// The plan for an outage of `seconds`.
    public static func plan(offlineFor seconds: Double, cursorLive: Bool) -> Plan {
        guard cursorLive else { return .fullSnapshot }
        if seconds < resumeWithin { return .resumeFeed }
        if seconds < rereadWithin { return .resumeAndRereadCalls }
        return .fullSnapshot
    }

    /// Reachability says the network is gone.
    public mutating func networkLost(at time: Double) -> Action {
        let wasOnline = isOnline
        isOnline = false
        if outageStart == nil { outageStart = time }
        return wasOnline ? .holdFeed : .none
    }

    /// Reachability says the network is back (also a change of path while online, e.g. Wi-Fi to
    /// cellular, during an outage of failed requests: a moment to try again at once).
    public mutating func networkRestored(at time: Double, cursorLive: Bool) -> Action {
        isOnline = true
        guard let start = outageStart else { return .none }
        let plan = Self.plan(offlineFor: time - start, cursorLive: cursorLive)
        planned = max(planned ?? plan, plan)
        return .reconnect(plan)
    }

    /// A request got no answer (a transport failure or timeout, not an HTTP error).
    public mutating func requestFailed(at time: Double) -> Action {
        if outageStart == nil { outageStart = time }
        return .none
    }

    /// A request sent at `sentAt` got an answer: the outage, if any, is over. It is planned from
    /// that moment (the network worked by then) when that says more than the plans already
    /// given: reachability never said the network was back, or it flapped on without letting a
    /// request through. A long poll sent just after the network came back asks for nothing more.
    /// One sent before the outage began proves nothing about the network now.
    public mutating func requestSucceeded(sentAt: Double, cursorLive: Bool) -> Action {
        guard let start = outageStart else {
            isOnline = true
            return .none
        }
        guard sentAt >= start else { return .none }
        isOnline = true
        defer {
            outageStart = nil
            planned = nil
        }
        let plan = Self.plan(offlineFor: max(0, sentAt - start), cursorLive: cursorLive)
        if let planned, planned >= plan { return .none }
        return .reconnect(plan)
    }
}
