import Foundation

/// When one segment of a stream may be handed to the receiver, and what it went through.
public struct SegmentRelease: Sendable, Equatable {
    /// The segment's length in bytes (zero for a handshake packet or the end of the stream).
    public var byteCount: Int
    /// The earliest time the bytes may be delivered, in the caller's seconds.
    public var releaseAt: Double
    /// How many times the segment was lost before it got through.
    public var losses: Int
    /// The retransmission timeouts the losses cost, in seconds (zero when none).
    public var stall: Double

    /// Creates a release.
    public init(byteCount: Int, releaseAt: Double, losses: Int = 0, stall: Double = 0) {
        self.byteCount = byteCount
        self.releaseAt = releaseAt
        self.losses = losses
        self.stall = stall
    }
}

/// The pure schedule of one direction of one connection: given when bytes arrive at the
/// simulated link, says when each segment may leave it. No clock, no I/O: times are the caller's
/// seconds (any origin) and all randomness comes from `random`.
///
/// See ``NetworkProfile`` for the model. Release times never decrease, so a caller that
/// delivers in release order keeps the stream in order.
///
/// ```swift
/// var schedule = LinkSchedule(link: NetworkProfile.poor3G.downlink, random: SplitMix64(seed: 7))
/// for segment in schedule.bytesArrived(4000, at: now) { queue(segment.byteCount, at: segment.releaseAt) }
/// ```
public struct LinkSchedule<Random: RandomNumberGenerator> {
    /// At most this many losses of one segment are simulated (Linux's `tcp_retries2` default);
    /// the next try goes through.
    public static var maximumRetransmissions: Int { 15 }
    /// At most this many losses of one handshake packet (Linux's `tcp_syn_retries` default).
    public static var maximumHandshakeRetransmissions: Int { 6 }
    /// The first retransmission timeout of a SYN or SYN-ACK (RFC 6298, section 2.1).
    public static var handshakeTimeout: Double { 1 }

    /// The direction's parameters.
    public let link: NetworkProfile.Link
    /// The source of every random draw.
    public private(set) var random: Random
    /// When the simulated sender finishes the segments given so far (bandwidth pacing).
    public private(set) var transmitterFreeAt: Double
    /// The latest release so far; no later segment is released before it.
    public private(set) var lastReleaseAt: Double
    /// How many times in a row the retransmission timer has expired and doubled: for lost
    /// segments, and for delivered ones whose ACK was lost. Karn's rule: only a segment sent
    /// once and acknowledged (a clean round-trip sample) resets it.
    public private(set) var backoff = 0
    /// The timer of the last segment whose ACK was lost: when it fires, and the backoff had a
    /// later segment's ACK come back before that (ACKs are cumulative, so in a stream the next
    /// ACK covers a lost one and the timer never fires).
    private var pendingExpiry: (at: Double, coveredBackoff: Int)?

    private let latency: Double
    private let jitter: Double
    private let initialTimeout: Double
    private let maximumTimeout: Double
    /// The loss probability of the ACKs, which travel the reverse direction, and their latency.
    private let ackLoss: Double
    private let ackLatency: Double

    /// Creates the schedule of an idle direction; nothing is released before `time`. `reverse`
    /// is the direction its ACKs travel (the profile's other link): a lost ACK makes the sender's
    /// timer expire although the segment arrived, and the backoff grows as for a lost segment.
    /// Without it ACKs are never lost and take this direction's latency back.
    public init(
        link: NetworkProfile.Link, random: Random, startingAt time: Double = 0, reverse: NetworkProfile.Link? = nil
    ) {
        self.link = link
        self.random = random
        transmitterFreeAt = time
        lastReleaseAt = time
        latency = link.latency.seconds
        jitter = link.jitter.seconds
        initialTimeout = link.loss.initialTimeout.seconds
        maximumTimeout = link.loss.maximumTimeout.seconds
        ackLoss = reverse?.loss.probability ?? 0
        ackLatency = reverse?.latency.seconds ?? link.latency.seconds
    }

    /// The retransmission timeout after `losses` losses in a row: the initial one doubled that
    /// many times, capped at the maximum.
    public func retransmissionTimeout(afterLosses losses: Int) -> Double {
        Self.backedOff(initialTimeout, losses: losses, cap: maximumTimeout)
    }

    /// Nothing is sent before `time` (the connection's handshake is not done until then).
    public mutating func hold(until time: Double) {
        transmitterFreeAt = max(transmitterFreeAt, time)
    }

    /// `count` bytes arrived at `time`: cuts them into segments of at most `segmentBytes` and
    /// schedules each in turn.
    public mutating func bytesArrived(_ count: Int, at time: Double) -> [SegmentRelease] {
        let size = max(1, link.loss.segmentBytes)
        var releases: [SegmentRelease] = []
        releases.reserveCapacity((count + size - 1) / size)
        var remaining = count
        while remaining > 0 {
            let length = min(size, remaining)
            releases.append(segmentArrived(byteCount: length, at: time))
            remaining -= length
        }
        return releases
    }

    /// One segment of `byteCount` bytes arrived at `time`: paces it behind the segments before
    /// it, decides whether (and how often) it is lost, and adds latency and jitter. Each loss
    /// waits the current retransmission timeout and doubles it. After the segment arrived, each
    /// lost ACK (the reverse link's loss) lets the timer expire and double again, unless the next
    /// segment's ACK gets back first; the backoff then carries over to the next segment.
    public mutating func segmentArrived(byteCount: Int, at time: Double) -> SegmentRelease {
        let start = max(time, transmitterFreeAt)
        let transmission = link.bytesPerSecond.map { Double(byteCount) / Double($0) } ?? 0
        let sent = start + transmission
        transmitterFreeAt = sent
        if let expiry = pendingExpiry {
            // This segment's ACK (cumulative) reaches the sender before the earlier timer fires.
            if sent + latency + ackLatency < expiry.at { backoff = expiry.coveredBackoff }
            pendingExpiry = nil
        }
        let p = link.loss.probability
        var losses = 0
        var stall = 0.0
        if p > 0 {
            while losses < Self.maximumRetransmissions, random.nextUnit() < p {
                stall += retransmissionTimeout(afterLosses: backoff)
                backoff += 1
                losses += 1
            }
        }
        // Karn: a retransmitted segment's ACK gives no round-trip sample and resets nothing.
        let clean = losses == 0 ? 0 : backoff
        if ackLoss > 0, random.nextUnit() < ackLoss {
            // The ACK is lost: the timer fires one timeout after the copy that arrived was sent,
            // and sends it again; again each time that copy or its ACK is lost.
            pendingExpiry = (sent + stall + retransmissionTimeout(afterLosses: backoff), clean)
            backoff += 1
            var expirations = 1
            while losses + expirations < Self.maximumRetransmissions,
                random.nextUnit() < 1 - (1 - p) * (1 - ackLoss)
            {
                backoff += 1
                expirations += 1
            }
        } else {
            backoff = clean
        }
        let arrival = sent + latency + drawJitter() + stall
        let release = max(arrival, lastReleaseAt)
        lastReleaseAt = release
        return SegmentRelease(byteCount: byteCount, releaseAt: release, losses: losses, stall: stall)
    }

    /// The sender closed its side at `time`: returns when the receiver may see the end of the
    /// stream, after every byte before it and one latency after the last of them was sent.
    public mutating func endArrived(at time: Double) -> Double {
        let release = max(max(time, transmitterFreeAt) + latency, lastReleaseAt)
        lastReleaseAt = release
        return release
    }

    /// A handshake packet (SYN or SYN-ACK) sent at `time`: when it arrives. Lost ones wait
    /// ``handshakeTimeout``, doubling; the data backoff is left alone.
    public mutating func handshakePacketSent(at time: Double) -> SegmentRelease {
        var losses = 0
        var stall = 0.0
        if link.loss.probability > 0 {
            let cap = max(maximumTimeout, Self.handshakeTimeout)
            while losses < Self.maximumHandshakeRetransmissions, random.nextUnit() < link.loss.probability {
                stall += Self.backedOff(Self.handshakeTimeout, losses: losses, cap: cap)
                losses += 1
            }
        }
        return SegmentRelease(
            byteCount: 0, releaseAt: time + latency + drawJitter() + stall, losses: losses, stall: stall)
    }

    /// The least the `quantile` (0…1) of one segment's delay can be on `link`, in seconds:
    /// its latency plus the retransmission timeouts of the losses in a row that the quantile
    /// still covers (jitter only adds, so it is left out). A segment is lost `k` times or more
    /// with probability `pᵏ`, so the quantile waits for the smallest `k` with `pᵏ⁺¹ ≤ 1 − q`.
    /// At 50 % loss the 95th percentile needs four losses (0.5⁵ ≈ 3 % ≤ 5 % < 0.5⁴): 200 + 400 +
    /// 800 + 1600 ms. No design beats it with one message over one connection.
    public static func delayFloor(of link: NetworkProfile.Link, quantile: Double) -> Double {
        let latency = link.latency.seconds, p = link.loss.probability
        guard p > 0, quantile > 0 else { return latency }
        let tail = max(1 - min(quantile, 1), 0)
        var losses = 0
        while losses < maximumRetransmissions, pow(p, Double(losses + 1)) > tail { losses += 1 }
        let initial = link.loss.initialTimeout.seconds, cap = link.loss.maximumTimeout.seconds
        return latency + (0..<losses).reduce(0) { $0 + backedOff(initial, losses: $1, cap: cap) }
    }

    private mutating func drawJitter() -> Double {
        jitter > 0 ? random.nextUnit() * jitter : 0
    }

    private static func backedOff(_ initial: Double, losses: Int, cap: Double) -> Double {
        var timeout = initial
        for _ in 0..<max(0, losses) {
            timeout *= 2
            if timeout >= cap { return cap }
        }
        return min(timeout, cap)
    }
}

extension LinkSchedule: Sendable where Random: Sendable {}

extension Duration {
    /// The duration in seconds as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
