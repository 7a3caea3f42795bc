/// The playout buffer of the relay's audio: frames arrive when the network delivers them (over
/// TCP: in order, but in bursts after a stall), and the speaker takes one every 20 ms.
///
/// - It fills to its target (3 frames, 60 ms, on a steady network) before playing, then plays one
///   frame per pull; a frame waits about 40–60 ms.
/// - It measures how bursty arrivals are: the deviation of each gap between arrivals from the
///   20 ms frame period, smoothed fast upward (1/4) and slowly downward (1/64), in the spirit of
///   RTP's interarrival jitter (RFC 3550 §6.4.1) but against the nominal period. It raises its
///   target for a bursty network, up to `maxMilliseconds`, and lowers it slowly once arrivals
///   are steady again.
/// - It stays shallow: more than two frames above the target (a burst after a stall) and the
///   oldest go, so the delay it adds never builds up.
/// - An empty buffer at a pull conceals the gap: the last frame again, at half the level each
///   time, then silence; playing resumes once the target is refilled.
///
/// Pure: time comes in as monotonic nanoseconds.
public struct JitterBuffer: Sendable {
    public struct Settings: Sendable {
        public var frameMilliseconds = 20.0
        /// The target on a steady network.
        public var targetMilliseconds = 60.0
        public var minMilliseconds = 40.0
        public var maxMilliseconds = 200.0

        public init() {}
    }

    /// What happened so far.
    public struct Statistics: Sendable, Equatable {
        public var received = 0
        /// Frames played as they arrived.
        public var played = 0
        /// Pulls after the first frame played that found nothing to play (concealed or silent).
        public var concealed = 0
        /// Frames dropped to stay shallow.
        public var dropped = 0
    }

    public let settings: Settings
    public private(set) var statistics = Statistics()
    private var frames: [[Int16]] = []
    private var playing = false
    private var lastArrival: UInt64?
    /// Smoothed deviation of arrival gaps from the frame period, in milliseconds.
    public private(set) var jitterMilliseconds = 0.0
    private var last: [Int16]?
    private var concealedInARow = 0
    /// Silence before the first frame ever played is the call's start, not a gap.
    private var started = false

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Frames waiting to be played.
    public var depth: Int { frames.count }

    /// The current target, in frames: the base target, or more on a bursty network.
    public var targetFrames: Int {
        let wanted = max(settings.targetMilliseconds, settings.frameMilliseconds + 3 * jitterMilliseconds)
        let bounded = min(settings.maxMilliseconds, max(settings.minMilliseconds, wanted))
        return Int((bounded / settings.frameMilliseconds).rounded(.up))
    }

    /// A frame arrived at `now`.
    public mutating func push(_ frame: [Int16], at now: UInt64) {
        statistics.received += 1
        if let lastArrival, now >= lastArrival {
            let gap = Double(now - lastArrival) / 1e6
            let deviation = abs(gap - settings.frameMilliseconds)
            // Rising fast (a burst must be covered at once), falling slowly (1/64 a frame).
            let weight = deviation > jitterMilliseconds ? 1.0 / 4 : 1.0 / 64
            jitterMilliseconds += (deviation - jitterMilliseconds) * weight
        }
        lastArrival = now
        frames.append(frame)
        let limit = targetFrames + 2
        if frames.count > limit {
            statistics.dropped += frames.count - targetFrames
            frames.removeFirst(frames.count - targetFrames)
        }
    }

    /// The frame to play now (`samples` long): a real one, a concealment, or silence.
    public mutating func pull(samples: Int, at now: UInt64) -> [Int16] {
        if !playing, frames.count >= targetFrames {
            playing = true
            started = true
        }
        if playing, !frames.isEmpty {
            let frame = frames.removeFirst()
            statistics.played += 1
            last = frame
            concealedInARow = 0
            return frame
        }
        // Nothing to play: conceal, and refill before playing again.
        if playing { playing = false }
        guard started else { return [Int16](repeating: 0, count: samples) }
        statistics.concealed += 1
        concealedInARow += 1
        guard let last, concealedInARow <= 3 else { return [Int16](repeating: 0, count: samples) }
        let scale = Float(1) / Float(1 << concealedInARow)
        return last.map { Int16(Float($0) * scale) }
    }
}
