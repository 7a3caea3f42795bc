/// Round trips and losses of the SDK's own requests over a sliding window (SPEC §4 rule 12), and
/// the answer deadline they call for: the decisions alone, with times as inputs (seconds on any
/// monotonic scale), so they are tested without a network.
///
/// A sample older than ``window`` no longer counts, and at most ``capacity`` are kept (the
/// newest). The round trip is the mean of the answered samples; the loss is the share of
/// samples that got no answer (a transport failure or a timeout).
///
/// ```swift
/// var estimator = NetworkQualityEstimator()
/// estimator.answered(after: 0.2, at: 10)
/// estimator.lost(at: 10.5)
/// estimator.answerDeadline(at: 11)   // 1.5 + 2·0.2 + 5·0.5 = 4.4, held at 3.5
/// ```
public struct NetworkQualityEstimator: Sendable, Equatable {
    /// How far back samples count (seconds).
    public static let window = 5.0
    /// At most this many samples count (the newest).
    public static let capacity = 50
    /// The answer deadline's bounds (seconds); with no sample in the window it is the longest.
    public static let shortestAnswerDeadline = 1.5
    public static let longestAnswerDeadline = 3.5

    /// One request's outcome.
    public struct Sample: Sendable, Equatable {
        /// When it ended.
        public var time: Double
        /// Its round trip (seconds); nil when it got no answer.
        public var roundTrip: Double?
    }

    /// The samples kept, oldest first.
    public private(set) var samples: [Sample] = []

    public init() {}

    /// A request was answered `roundTrip` seconds after it was sent, at `time`.
    public mutating func answered(after roundTrip: Double, at time: Double) {
        guard roundTrip.isFinite, roundTrip >= 0 else { return }
        add(Sample(time: time, roundTrip: roundTrip), at: time)
    }

    /// A request got no answer (failed or timed out) at `time`.
    public mutating func lost(at time: Double) {
        add(Sample(time: time, roundTrip: nil), at: time)
    }

    /// The samples that count at `time`.
    public func current(at time: Double) -> ArraySlice<Sample> {
        let first = samples.firstIndex { time - $0.time <= Self.window } ?? samples.endIndex
        return samples[first...]
    }

    /// The mean round trip (seconds) of the answered samples in the window; nil without one.
    public func roundTrip(at time: Double) -> Double? {
        let trips = current(at: time).compactMap(\.roundTrip)
        return trips.isEmpty ? nil : trips.reduce(0, +) / Double(trips.count)
    }

    /// The share (0…1) of the window's samples that got no answer; 0 without samples.
    public func loss(at time: Double) -> Double {
        let window = current(at: time)
        guard !window.isEmpty else { return 0 }
        return Double(window.filter { $0.roundTrip == nil }.count) / Double(window.count)
    }

    /// `clamp(1.5 + 2·rtt + 5·loss, 1.5, 3.5)` seconds from the window at `time`; with no sample
    /// in the window (nothing known), the longest, 3.5 s. With only losses the round trip
    /// counts as 0 (the loss alone reaches the ceiling).
    public func answerDeadline(at time: Double) -> Double {
        guard !current(at: time).isEmpty else { return Self.longestAnswerDeadline }
        return Self.answerDeadline(roundTrip: roundTrip(at: time) ?? 0, loss: loss(at: time))
    }

    /// `clamp(1.5 + 2·roundTrip + 5·loss, 1.5, 3.5)`, `roundTrip` in seconds, `loss` 0…1.
    public static func answerDeadline(roundTrip: Double, loss: Double) -> Double {
        let raw = 1.5 + 2 * max(0, roundTrip) + 5 * min(max(loss, 0), 1)
        guard raw.isFinite else { return longestAnswerDeadline }
        return min(max(raw, shortestAnswerDeadline), longestAnswerDeadline)
    }

    private mutating func add(_ sample: Sample, at time: Double) {
        // Kept in time order (a late sample goes where it belongs), aged and capped.
        let index = samples.lastIndex { $0.time <= sample.time }.map { $0 + 1 } ?? 0
        samples.insert(sample, at: index)
        samples.removeAll { time - $0.time > Self.window }
        if samples.count > Self.capacity { samples.removeFirst(samples.count - Self.capacity) }
    }
}
