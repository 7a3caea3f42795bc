import Foundation

/// The pure schedule of one connection: its handshake, its two directions and whether and when
/// it is reset. Everything follows from the profile, the seed and the opening time, so a run
/// with the same seed makes the same decisions.
///
/// ```swift
/// var schedule = ConnectionSchedule(profile: .wifi30Loss, seed: 7, openedAt: now)
/// if let resetAt = schedule.resetAt { … }
/// let releases = schedule.uplink.bytesArrived(512, at: now)
/// ```
public struct ConnectionSchedule: Sendable {
    /// When the connection was accepted.
    public let openedAt: Double
    /// When the simulated handshake completes: the SYN's and the SYN-ACK's trips, with their
    /// losses. The client's data leaves no earlier.
    public let establishedAt: Double
    /// The client's SYN: when it reached the server side, and its losses.
    public let syn: SegmentRelease
    /// The SYN-ACK: when it reached the client (``establishedAt``), and its losses.
    public let synAck: SegmentRelease
    /// When the connection is reset, or `nil` when it never is.
    public let resetAt: Double?
    /// Client → upstream.
    public var uplink: LinkSchedule<SplitMix64>
    /// Upstream → client.
    public var downlink: LinkSchedule<SplitMix64>

    /// Plans a connection opened at `openedAt` under `profile`, drawing from a generator seeded
    /// with `seed` (split into one stream for resets and one per direction).
    public init(profile: NetworkProfile, seed: UInt64, openedAt: Double) {
        var root = SplitMix64(seed: seed)
        var resetRandom = root.split()
        var uplink = LinkSchedule(
            link: profile.uplink, random: root.split(), startingAt: openedAt, reverse: profile.downlink)
        var downlink = LinkSchedule(
            link: profile.downlink, random: root.split(), startingAt: openedAt, reverse: profile.uplink)
        let syn = uplink.handshakePacketSent(at: openedAt)
        let synAck = downlink.handshakePacketSent(at: syn.releaseAt)
        uplink.hold(until: synAck.releaseAt)
        downlink.hold(until: synAck.releaseAt)
        self.openedAt = openedAt
        establishedAt = synAck.releaseAt
        self.syn = syn
        self.synAck = synAck
        resetAt = Self.resetTime(for: profile.resets, openedAt: openedAt, using: &resetRandom)
        self.uplink = uplink
        self.downlink = downlink
    }

    /// Whether a connection opened at `openedAt` is reset, and when: doomed with
    /// `resets.probability`, then reset after an exponential delay with mean `resets.meanDelay`.
    public static func resetTime(
        for resets: NetworkProfile.Resets, openedAt: Double, using random: inout some RandomNumberGenerator
    ) -> Double? {
        guard resets.probability > 0, random.nextUnit() < resets.probability else { return nil }
        let mean = resets.meanDelay.seconds
        guard mean > 0 else { return openedAt }
        // Inverse transform: 1 - u is in (0, 1], so the logarithm is finite.
        return openedAt - mean * log(1 - random.nextUnit())
    }

    /// The seed of the proxy's `index`th connection (from 0): output number `index` of a
    /// ``SplitMix64`` seeded with `proxySeed`, computed directly. Connections get their own
    /// streams, so their decisions do not depend on how their threads interleave.
    public static func connectionSeed(proxySeed: UInt64, index: UInt64) -> UInt64 {
        var generator = SplitMix64(seed: proxySeed &+ index &* 0x9E37_79B9_7F4A_7C15)
        return generator.next()
    }
}
