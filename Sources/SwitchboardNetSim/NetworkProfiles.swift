import Foundation

/// How one simulated network treats a TCP connection: delay, jitter and bandwidth per direction,
/// stalls from lost segments, and connection resets.
///
/// "Uplink" is client → upstream (the phone sending), "downlink" is upstream → client (the
/// phone receiving). The proxy applies a profile to the byte stream of each accepted connection;
/// it never drops, duplicates, reorders or corrupts bytes, because the application on top of a
/// real TCP connection never sees that either: it sees delay. What a weak network does to TCP is
/// modelled as follows (``LinkSchedule`` and ``ConnectionSchedule`` hold the arithmetic):
///
/// - **Handshake.** The client's `connect` is answered at once by the proxy's kernel, so the
///   three-way handshake is charged to the data instead: nothing leaves the client before one
///   round trip (uplink + downlink latency, plus jitter) after the connection opened. A lost SYN
///   or SYN-ACK (each with its direction's loss probability) waits for the 1 s initial
///   retransmission timeout of RFC 6298, doubling on each further loss. The upstream (the
///   server) is contacted only when the simulated handshake is done, as a real server's
///   `accept` returns only then: its request-head timer does not run during SYN retries.
/// - **Latency and jitter.** Each segment arrives `latency + U(0, jitter)` after it was sent:
///   the latency is a floor, the jitter only adds. A segment never overtakes the one before it
///   (TCP delivers in order), so release times are monotonic per direction.
/// - **Bandwidth.** A capped direction sends one segment after another at `bytesPerSecond`; a
///   segment waits for the ones queued before it (a serialisation queue, like a bottleneck link).
/// - **Loss stalls.** The stream is cut into segments of `segmentBytes`. Each segment is "lost"
///   with `probability`; a lost segment reaches the receiver one retransmission timeout (RTO)
///   later, and each further loss of the same data adds the next RTO. The RTO starts at
///   `initialTimeout`, doubles with every consecutive timer expiry, is capped at
///   `maximumTimeout`, and returns to `initialTimeout` only when a segment sent once is
///   acknowledged (Karn's rule: a retransmitted segment's ACK does not reset the backoff).
///   ACKs travel the other direction and are lost with its probability: a segment that arrived
///   but whose ACK was lost lets the sender's timer expire and double again (the copy it sends,
///   or that copy's ACK, may be lost in turn), unless the next segment's cumulative ACK gets
///   back before the timer fires, as it does in a steady stream. The delivered bytes do not
///   wait for that; the next segments' losses do, at the doubled timeout. Segments behind a
///   stalled one are held until it arrives and are then released together, as a receiver
///   holding out-of-order data (SACK) hands it to the application once the hole is filled:
///   head-of-line blocking. Not modelled: congestion-window collapse and slow start after a
///   timeout, fast retransmit (which would recover some losses in one round trip instead of an
///   RTO), and loss of the FIN (the end of the stream only waits for the bytes before it and
///   one latency). So, for small messages (the wake-up traffic this exists for) the stalls are
///   close to real TCP; for bulk transfers real TCP would be slower still.
/// - **Resets.** When a connection opens it is doomed with `resets.probability`; a doomed
///   connection is reset `Exp(meanDelay)` seconds later (`meanDelay` zero: at once, before the
///   upstream is contacted) by closing both sides with `SO_LINGER` 0, so each peer gets an RST.
///   With probability 1, a client that reconnects after every reset sees a Poisson process of
///   resets with mean time between resets `meanDelay` (an exponential lifetime is memoryless).
///
/// ```swift
/// let profiles = try NetworkProfile.parseList("good,poor_3g")
/// var flaky = NetworkProfile.poor4G
/// flaky.resets = .init(probability: 1, meanDelay: .seconds(5))
/// ```
public struct NetworkProfile: Sendable, Equatable {
    /// The profile's name, as given to `--profile` (`good`, `poor_3g`, …).
    public var name: String
    /// Client → upstream.
    public var uplink: Link
    /// Upstream → client.
    public var downlink: Link
    /// When connections get reset.
    public var resets: Resets

    /// Creates a profile.
    public init(name: String, uplink: Link, downlink: Link, resets: Resets = .none) {
        self.name = name
        self.uplink = uplink
        self.downlink = downlink
        self.resets = resets
    }

    /// One direction of the network.
    public struct Link: Sendable, Equatable {
        /// The one-way delay every segment has at least.
        public var latency: Duration
        /// Extra delay drawn uniformly from `0...jitter` per segment.
        public var jitter: Duration
        /// The bandwidth cap in bytes per second; `nil` for no cap.
        public var bytesPerSecond: Int?
        /// How lost segments stall the stream.
        public var loss: LossStall

        /// Creates a direction; no jitter, no cap and no loss unless given.
        public init(latency: Duration, jitter: Duration = .zero, bytesPerSecond: Int? = nil, loss: LossStall = .none) {
            self.latency = latency
            self.jitter = jitter
            self.bytesPerSecond = bytesPerSecond
            self.loss = loss
        }
    }

    /// The loss-stall model of one direction (see ``NetworkProfile`` for the exact modelling).
    public struct LossStall: Sendable, Equatable {
        /// The chance that one segment is lost, in `0..<1`.
        public var probability: Double
        /// The size of the unit the probability applies to: 1448 bytes is the TCP payload of a
        /// 1500-byte Ethernet/Wi-Fi packet with TCP timestamps, so `probability` reads as packet loss.
        public var segmentBytes: Int
        /// The first retransmission timeout of a loss run.
        public var initialTimeout: Duration
        /// The longest one retransmission timeout gets.
        public var maximumTimeout: Duration

        /// Creates a loss model. The defaults are Linux's minimum RTO (200 ms) and a cap of 6.4 s,
        /// five doublings; Linux caps at 120 s, but a stall past a few seconds already fails every
        /// wake-up deadline this harness measures, so longer ones teach nothing more.
        public init(
            probability: Double, segmentBytes: Int = 1448, initialTimeout: Duration = .milliseconds(200),
            maximumTimeout: Duration = .milliseconds(6400)
        ) {
            self.probability = probability
            self.segmentBytes = segmentBytes
            self.initialTimeout = initialTimeout
            self.maximumTimeout = maximumTimeout
        }

        /// Nothing is ever lost.
        public static let none = LossStall(probability: 0)
    }

    /// When connections are reset.
    public struct Resets: Sendable, Equatable {
        /// The chance that a new connection is reset at some point, in `0...1`.
        public var probability: Double
        /// The mean of the exponential delay from opening to the reset; zero resets at once.
        public var meanDelay: Duration

        /// Creates a reset model.
        public init(probability: Double, meanDelay: Duration) {
            self.probability = probability
            self.meanDelay = meanDelay
        }

        /// Connections are never reset.
        public static let none = Resets(probability: 0, meanDelay: .zero)
    }
}

// MARK: - The named profiles

extension NetworkProfile {
    /// `good`: a healthy home broadband or office line.
    ///
    /// 10 ms each way (20 ms RTT, the usual figure to a nearby data centre over fibre or cable),
    /// 2 ms jitter, 100 Mbit/s down (12,500,000 B/s) and 20 Mbit/s up (2,500,000 B/s), no loss,
    /// no resets. The control profile: wake-up times under it are the baseline.
    public static let good = NetworkProfile(
        name: "good",
        uplink: Link(latency: .milliseconds(10), jitter: .milliseconds(2), bytesPerSecond: 2_500_000),
        downlink: Link(latency: .milliseconds(10), jitter: .milliseconds(2), bytesPerSecond: 12_500_000))

    /// `poor_3g`: a weak 3G (UMTS/HSPA) connection.
    ///
    /// 100 ms each way (200 ms RTT) with 30 ms jitter, 750 kbit/s down (93,750 B/s) and
    /// 250 kbit/s up (31,250 B/s): between the common emulator presets for 3G (Apple's Network
    /// Link Conditioner "3G" is about 100 ms each way at 780/330 kbit/s; Lighthouse's "regular
    /// 3G" a 300 ms RTT at 700 kbit/s). 1% loss per 1448-byte segment, with a 400 ms first RTO
    /// (Linux computes SRTT + 4·RTTVAR, which at a jittery 200 ms RTT is about twice the RTT).
    /// 5% of connections are reset after 20 s on average: radio bearer drops and carrier NAT
    /// timeouts. The reset rate is chosen, not measured: enough that a run of a few dozen
    /// connections exercises reconnecting.
    public static let poor3G = NetworkProfile(
        name: "poor_3g",
        uplink: Link(
            latency: .milliseconds(100), jitter: .milliseconds(30), bytesPerSecond: 31_250,
            loss: LossStall(probability: 0.01, initialTimeout: .milliseconds(400))),
        downlink: Link(
            latency: .milliseconds(100), jitter: .milliseconds(30), bytesPerSecond: 93_750,
            loss: LossStall(probability: 0.01, initialTimeout: .milliseconds(400))),
        resets: Resets(probability: 0.05, meanDelay: .seconds(20)))

    /// `poor_4g`: LTE at the cell edge.
    ///
    /// 40 ms each way (80 ms RTT, the middle of the 60–100 ms usually seen on a loaded or distant
    /// LTE cell) with 20 ms jitter, 4 Mbit/s down (500,000 B/s), 1 Mbit/s up (125,000 B/s), 2%
    /// loss per segment, 300 ms first RTO (SRTT + 4·RTTVAR at an 80 ms RTT with that jitter).
    /// 2% of connections are reset after 30 s on average (handovers), chosen like `poor_3g`'s.
    public static let poor4G = NetworkProfile(
        name: "poor_4g",
        uplink: Link(
            latency: .milliseconds(40), jitter: .milliseconds(20), bytesPerSecond: 125_000,
            loss: LossStall(probability: 0.02, initialTimeout: .milliseconds(300))),
        downlink: Link(
            latency: .milliseconds(40), jitter: .milliseconds(20), bytesPerSecond: 500_000,
            loss: LossStall(probability: 0.02, initialTimeout: .milliseconds(300))),
        resets: Resets(probability: 0.02, meanDelay: .seconds(30)))

    /// `wifi_30_loss`: Wi-Fi losing 30% of packets (a far or crowded access point).
    ///
    /// 10 ms each way, 10 ms jitter, 20 Mbit/s both ways (2,500,000 B/s). 30% packet loss,
    /// modelled as a 30% chance per 1448-byte segment (one full packet) of a stall of one RTO,
    /// from Linux's 200 ms minimum, doubling per consecutive loss up to 6.4 s. At this rate
    /// about one small message in three waits at least 200 ms and one in eleven at least 600 ms;
    /// SYNs and SYN-ACKs are lost alike (1 s, then 2 s, …), so about half of all new connections
    /// wait at least 1 s in the handshake. 5% of connections are reset after 15 s on average.
    public static let wifi30Loss = NetworkProfile(
        name: "wifi_30_loss",
        uplink: Link(
            latency: .milliseconds(10), jitter: .milliseconds(10), bytesPerSecond: 2_500_000,
            loss: LossStall(probability: 0.3)),
        downlink: Link(
            latency: .milliseconds(10), jitter: .milliseconds(10), bytesPerSecond: 2_500_000,
            loss: LossStall(probability: 0.3)),
        resets: Resets(probability: 0.05, meanDelay: .seconds(15)))

    /// `wifi_50_loss`: Wi-Fi losing half of all packets (the edge of the access point's range).
    ///
    /// As `wifi_30_loss` but a 50% chance per segment: half of all small messages stall at least
    /// 200 ms, one in four at least 600 ms, one in eight at least 1.4 s; three new connections in
    /// four wait at least 1 s in the handshake, so a fresh request commonly takes several seconds
    /// (as real TCP does at this loss rate). 10% of connections are reset after 10 s on average.
    public static let wifi50Loss = NetworkProfile(
        name: "wifi_50_loss",
        uplink: Link(
            latency: .milliseconds(10), jitter: .milliseconds(10), bytesPerSecond: 2_500_000,
            loss: LossStall(probability: 0.5)),
        downlink: Link(
            latency: .milliseconds(10), jitter: .milliseconds(10), bytesPerSecond: 2_500_000,
            loss: LossStall(probability: 0.5)),
        resets: Resets(probability: 0.1, meanDelay: .seconds(10)))

    /// The same latency, jitter and bandwidth without simulated loss or resets: for running
    /// over a link that really drops packets, where the kernel's TCP does the recovering.
    public var delayOnly: NetworkProfile {
        var profile = self
        profile.uplink.loss = .none
        profile.downlink.loss = .none
        profile.resets = .none
        return profile
    }

    /// Every named profile, mildest first.
    public static let all: [NetworkProfile] = [good, poor4G, poor3G, wifi30Loss, wifi50Loss]

    /// The named profile called `name`, or `nil`.
    public static func named(_ name: String) -> NetworkProfile? {
        all.first { $0.name == name }
    }

    /// Parses a comma-separated list of profile names such as `"good,poor_3g"` (spaces around
    /// names are ignored), in the order given.
    ///
    /// Throws ``NetSimError`` with code `unknownProfile` naming the unknown name and the known
    /// ones, or `invalidProfile` for an empty list or an empty entry.
    public static func parseList(_ text: String) throws(NetSimError) -> [NetworkProfile] {
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if names == [""] {
            throw NetSimError(.invalidProfile, "no profile named; known profiles: \(knownNames)")
        }
        return try names.map { name throws(NetSimError) in
            if name.isEmpty {
                throw NetSimError(.invalidProfile, "empty profile name in '\(text)'; known profiles: \(knownNames)")
            }
            guard let profile = named(name) else {
                throw NetSimError(.unknownProfile, "unknown network profile '\(name)'; known profiles: \(knownNames)")
            }
            return profile
        }
    }

    /// The names of ``all``, comma-separated.
    static var knownNames: String { all.map(\.name).joined(separator: ", ") }

    /// Checks every number is in range; the proxy refuses a profile that fails.
    public func validate() throws(NetSimError) {
        func fail(_ problem: String) -> NetSimError {
            NetSimError(.invalidProfile, "network profile '\(name)': \(problem)")
        }
        if name.isEmpty { throw fail("the name is empty") }
        for (direction, link) in [("uplink", uplink), ("downlink", downlink)] {
            if link.latency < .zero { throw fail("\(direction) latency is negative") }
            if link.jitter < .zero { throw fail("\(direction) jitter is negative") }
            if let rate = link.bytesPerSecond, rate <= 0 {
                throw fail("\(direction) bandwidth must be positive or nil")
            }
            let loss = link.loss
            if !(0..<1).contains(loss.probability) {
                throw fail("\(direction) loss probability must be in 0..<1, not \(loss.probability)")
            }
            if loss.segmentBytes < 1 { throw fail("\(direction) segment size must be at least 1 byte") }
            if loss.initialTimeout <= .zero {
                throw fail("\(direction) initial retransmission timeout must be positive")
            }
            if loss.maximumTimeout < loss.initialTimeout {
                throw fail("\(direction) maximum retransmission timeout is below the initial one")
            }
        }
        if !(0...1).contains(resets.probability) {
            throw fail("reset probability must be in 0...1, not \(resets.probability)")
        }
        if resets.meanDelay < .zero { throw fail("mean delay before a reset is negative") }
    }
}
