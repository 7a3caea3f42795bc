import Foundation

/// When ``HedgingTransport`` sends a copy of a request on another connection, and which
/// answer it keeps: the decisions alone, with time and answers as inputs, so they are tested
/// without a network.
///
/// The delay before a copy is twice the fastest of the last ``window`` answers plus 50 ms,
/// within `minimumDelay…maximumDelay`. The fastest recent answer is the round trip without
/// loss (plus the server's work): on a lossy link, answers are either that or one
/// retransmission timeout (200 ms or more) later, so a smoothed average (TCP's `SRTT +
/// 4·RTTVAR`) would swell with the stalls and hedge only after the stalled copy had recovered
/// by itself. On a good network a request answers well inside the delay and no copy is sent.
///
/// ```swift
/// var policy = HedgePolicy()
/// policy.answered(after: 0.031)            // a request took 31 ms
/// let delay = policy.hedgeDelay            // 2 × 31 + 50 ms = 112 ms, held at 120 ms
/// ```
public struct HedgePolicy: Sendable, Equatable {
    /// Connections a request may use at once (the first copy and its hedges), at least 1.
    public var lanes: Int
    /// The delay before the first copy has any measurement to go on, in seconds.
    public var initialDelay: Double
    /// The delay never gets shorter than this (seconds): a copy sent sooner would duplicate
    /// requests that are merely waiting for the server.
    public var minimumDelay: Double
    /// Nor longer than this (seconds).
    public var maximumDelay: Double
    /// How many recent answers the fastest is taken from.
    public static let window = 32

    /// The most recent answer times (seconds), oldest first, at most ``window``.
    public private(set) var recent: [Double] = []

    /// Creates a policy: 4 lanes, 250 ms before the first measurement, 120 ms to 800 ms after
    /// (below Linux's 200 ms minimum retransmission timeout, so a copy overtakes a stalled
    /// segment, and above a busy server's usual answer time, so it rarely duplicates a request
    /// that is merely being worked on).
    public init(lanes: Int = 4, initialDelay: Double = 0.25, minimumDelay: Double = 0.12, maximumDelay: Double = 0.8) {
        self.lanes = max(1, lanes)
        self.initialDelay = initialDelay
        self.minimumDelay = minimumDelay
        self.maximumDelay = max(minimumDelay, maximumDelay)
    }

    /// A request was answered `seconds` after its copy was sent.
    public mutating func answered(after seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        recent.append(seconds)
        if recent.count > Self.window { recent.removeFirst(recent.count - Self.window) }
    }

    /// How long a copy waits for an answer before the next copy goes out on another lane.
    public var hedgeDelay: Double {
        guard let fastest = recent.min() else { return min(max(initialDelay, minimumDelay), maximumDelay) }
        return min(max(2 * fastest + 0.05, minimumDelay), maximumDelay)
    }

    /// What one copy came back with, as far as the choice between copies goes.
    public enum Outcome: Sendable, Equatable {
        /// A 2xx answer.
        case success
        /// 409: what a copy gets when another copy of the same request got through first (the
        /// call moved on), so it is kept back while another copy may still succeed.
        case conflict
        /// Any other HTTP answer: the server's verdict, final.
        case refused
        /// No answer (the connection failed): another lane may do better.
        case transportFailure
    }

    /// What to do after a copy came back with `outcome`, with `inFlight` other copies still
    /// out and `unusedLanes` lanes not tried yet for this request.
    public enum Step: Sendable, Equatable {
        /// Return this copy's answer (or error).
        case finish
        /// Keep waiting for the copies in flight.
        case wait
        /// Send a copy on another lane now, without waiting for the delay.
        case sendCopy
    }

    public static func step(after outcome: Outcome, inFlight: Int, unusedLanes: Int) -> Step {
        switch outcome {
        case .success, .refused: return .finish
        case .conflict: return inFlight > 0 ? .wait : .finish
        case .transportFailure:
            if unusedLanes > 0 { return .sendCopy }
            return inFlight > 0 ? .wait : .finish
        }
    }

    /// Which of the answers kept back to give when every copy came back without a success:
    /// an HTTP answer (the server's word) before a transport failure, else the first.
    public static func preferred(_ outcomes: [Outcome]) -> Int? {
        outcomes.firstIndex { $0 == .conflict || $0 == .refused } ?? (outcomes.isEmpty ? nil : 0)
    }
}
