import Testing
@testable import SwitchboardNetSim

private func link(
    latency: Duration = .milliseconds(50), jitter: Duration = .zero, bytesPerSecond: Int? = nil,
    loss: NetworkProfile.LossStall = .none
) -> NetworkProfile.Link {
    NetworkProfile.Link(latency: latency, jitter: jitter, bytesPerSecond: bytesPerSecond, loss: loss)
}

private func approximately(_ actual: Double, _ expected: Double) -> Bool { abs(actual - expected) < 1e-9 }

@Suite("Random numbers", .timeLimit(.minutes(3)))
struct SplitMix64Tests {
    @Test func matchesTheReferenceSequence() {
        // From the reference algorithm (Steele, Lea, Flood), computed independently.
        var random = SplitMix64(seed: 0)
        #expect(
            [random.next(), random.next(), random.next()] == [
                0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F,
            ])
    }

    @Test func sameSeedSameSequenceAndSplitStreamsDiffer() {
        var first = SplitMix64(seed: 42)
        var second = SplitMix64(seed: 42)
        #expect((0..<100).map { _ in first.next() } == (0..<100).map { _ in second.next() })
        var parent = SplitMix64(seed: 42)
        var child = parent.split()
        #expect((0..<10).map { _ in parent.next() } != (0..<10).map { _ in child.next() })
    }

    @Test func unitsStayInTheHalfOpenInterval() {
        var extremes = ScriptedRandom([0, 1 - 0x1p-53])
        #expect(extremes.nextUnit() == 0)
        #expect(extremes.nextUnit() < 1)
        var random = SplitMix64(seed: 9)
        let units = (0..<10_000).map { _ in random.nextUnit() }
        #expect(units.allSatisfy { (0..<1).contains($0) })
        #expect(abs(units.reduce(0, +) / Double(units.count) - 0.5) < 0.02)
    }
}

@Suite("Link schedule", .timeLimit(.minutes(3)))
struct LinkScheduleTests {
    @Test func unlimitedLinkReleasesAfterExactlyTheLatency() {
        var schedule = LinkSchedule(link: link(), random: SplitMix64(seed: 1))
        let releases = schedule.bytesArrived(3000, at: 2.0)
        #expect(releases.map(\.byteCount) == [1448, 1448, 104])
        #expect(releases.allSatisfy { approximately($0.releaseAt, 2.05) })
    }

    @Test func bandwidthPacesSegmentsOneAfterAnother() {
        // 1000 B/s: a 100-byte segment takes 0.1 s to send, then 0.05 s to arrive.
        var schedule = LinkSchedule(
            link: link(bytesPerSecond: 1000, loss: .init(probability: 0, segmentBytes: 100)),
            random: SplitMix64(seed: 1))
        let burst = schedule.bytesArrived(300, at: 0)
        #expect(zip(burst.map(\.releaseAt), [0.15, 0.25, 0.35]).allSatisfy { approximately($0, $1) })
        // The link is still busy until 0.3: a segment arriving at 0.2 waits for it.
        #expect(approximately(schedule.segmentArrived(byteCount: 100, at: 0.2).releaseAt, 0.45))
        // An idle link sends at once.
        #expect(approximately(schedule.segmentArrived(byteCount: 50, at: 1.0).releaseAt, 1.1))
    }

    @Test(arguments: 0..<40)
    func jitterNeverReordersAndNeverUndercutsTheLatency(seed: UInt64) {
        var arrivals = SplitMix64(seed: 1000 + seed)
        var schedule = LinkSchedule(
            link: link(latency: .milliseconds(20), jitter: .milliseconds(50), bytesPerSecond: 1_000_000),
            random: SplitMix64(seed: seed))
        var time = 0.0
        var previous = -Double.infinity
        var clamped = 0
        for _ in 0..<200 {
            time += arrivals.nextUnit() * 0.01
            let release = schedule.segmentArrived(byteCount: 500, at: time)
            #expect(release.releaseAt >= previous)
            #expect(release.releaseAt >= time + 0.0205 - 1e-9)
            if approximately(release.releaseAt, previous) { clamped += 1 }
            previous = release.releaseAt
        }
        // 50 ms of jitter on arrivals ~5 ms apart would reorder often: the clamp did work.
        #expect(clamped > 0)
    }

    @Test func aLostSegmentStallsForOneTimeoutAndTheBackoffResetsOnACleanOne() {
        let loss = NetworkProfile.LossStall(
            probability: 0.3, initialTimeout: .milliseconds(200), maximumTimeout: .seconds(1))
        // Draws: lost, then through; then through at once; then lost, through.
        var schedule = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0.1, 0.9]))
        let first = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(first.losses == 1)
        #expect(approximately(first.stall, 0.2))
        #expect(approximately(first.releaseAt, 0.25))
        #expect(schedule.backoff == 1)
        let second = schedule.segmentArrived(byteCount: 10, at: 1)
        #expect(second.losses == 0)
        #expect(approximately(second.releaseAt, 1.05))
        #expect(schedule.backoff == 0)
    }

    @Test func consecutiveLossesDoubleTheTimeoutUpToTheCap() {
        let loss = NetworkProfile.LossStall(
            probability: 0.5, initialTimeout: .milliseconds(200), maximumTimeout: .seconds(1))
        var schedule = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0, 0, 0, 0, 0, 0.9]))
        let release = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(release.losses == 5)
        #expect(approximately(release.stall, 0.2 + 0.4 + 0.8 + 1.0 + 1.0))
        #expect(approximately(release.releaseAt, 0.05 + 3.4))
        #expect([0, 1, 2, 3, 10].map { schedule.retransmissionTimeout(afterLosses: $0) } == [0.2, 0.4, 0.8, 1.0, 1.0])
    }

    @Test func theBackoffCarriesOverUntilASegmentGoesThroughFirstTime() {
        // Karn's rule: a segment that needed a retransmission does not reset the timer.
        let loss = NetworkProfile.LossStall(probability: 0.5, initialTimeout: .milliseconds(200))
        var random = ScriptedRandom([0, 0.9, 0, 0.9, 0.9, 0, 0.9])
        var schedule = LinkSchedule(link: link(loss: loss), random: random)
        let stalls = (0..<4).map { schedule.segmentArrived(byteCount: 10, at: Double($0) * 10).stall }
        #expect(zip(stalls, [0.2, 0.4, 0, 0.2]).allSatisfy { approximately($0, $1) })
        random = schedule.random
        #expect(random.draws == 7)
    }

    @Test func aLostAcknowledgementExpiresTheTimerAndTheBackoffCarriesOver() {
        let loss = NetworkProfile.LossStall(probability: 0.5, initialTimeout: .milliseconds(200))
        let reverse = link(latency: .milliseconds(30), loss: loss)
        // The segment gets through (0.9); its ACK is lost (0); the copy the timer sends, or its
        // ACK, is lost again (0); the next copy's ACK gets back (0.9).
        var schedule = LinkSchedule(
            link: link(loss: loss), random: ScriptedRandom([0.9, 0, 0, 0.9, 0, 0.9]), reverse: reverse)
        let delivered = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(delivered.losses == 0 && delivered.stall == 0)
        #expect(approximately(delivered.releaseAt, 0.05), "the receiver has it after one latency")
        #expect(schedule.backoff == 2, "two expirations while the ACKs were lost")
        // The next segment, a second later (no ACK of it could have covered the first timer),
        // is lost and waits the twice-doubled timeout.
        let next = schedule.segmentArrived(byteCount: 10, at: 1)
        #expect(next.losses == 1)
        #expect(approximately(next.stall, 0.8))
    }

    @Test func inAStreamTheNextAcknowledgementCoversALostOne() {
        let loss = NetworkProfile.LossStall(probability: 0.5, initialTimeout: .milliseconds(200))
        let reverse = link(latency: .milliseconds(30), loss: loss)
        // Through (0.9), ACK lost (0), its retransmission acknowledged (0.9); the next segment
        // 10 ms later is acknowledged at 0.09 s, before the timer (0.2 s): nothing expired.
        var schedule = LinkSchedule(
            link: link(loss: loss), random: ScriptedRandom([0.9, 0, 0.9, 0, 0.9]), reverse: reverse)
        _ = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(schedule.backoff == 1)
        let next = schedule.segmentArrived(byteCount: 10, at: 0.01)
        #expect(next.losses == 1)
        #expect(approximately(next.stall, 0.2), "the backoff of the covered timer was undone")
    }

    @Test func withoutAReverseLinkAcknowledgementsAreNeverLostAndDrawNothing() {
        let loss = NetworkProfile.LossStall(probability: 0.5, initialTimeout: .milliseconds(200))
        var schedule = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0.9]))
        _ = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(schedule.backoff == 0 && schedule.random.draws == 1)
    }

    @Test func aStalledSegmentHoldsBackTheOnesBehindIt() {
        let loss = NetworkProfile.LossStall(probability: 0.3)
        var schedule = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0, 0.9, 0.9, 0.9]))
        let stalled = schedule.segmentArrived(byteCount: 10, at: 0)
        let behind = schedule.segmentArrived(byteCount: 10, at: 0.01)
        let later = schedule.segmentArrived(byteCount: 10, at: 1)
        #expect(approximately(stalled.releaseAt, 0.25))
        #expect(behind.losses == 0)
        #expect(behind.releaseAt == stalled.releaseAt)
        #expect(approximately(later.releaseAt, 1.05))
    }

    @Test func aSegmentIsLostAtMostTheRetransmissionLimit() {
        let loss = NetworkProfile.LossStall(
            probability: 0.99, initialTimeout: .milliseconds(200), maximumTimeout: .seconds(1))
        var schedule = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0]))
        let release = schedule.segmentArrived(byteCount: 10, at: 0)
        #expect(release.losses == LinkSchedule<ScriptedRandom>.maximumRetransmissions)
        #expect(approximately(release.stall, 0.2 + 0.4 + 0.8 + 12 * 1.0))
    }

    @Test func theEndOfStreamComesAfterEveryByte() {
        var schedule = LinkSchedule(link: link(bytesPerSecond: 1000), random: SplitMix64(seed: 3))
        let last = schedule.bytesArrived(500, at: 0).last!
        let end = schedule.endArrived(at: 0.1)
        #expect(end >= last.releaseAt)
        #expect(approximately(end, 0.5 + 0.05))
        // On an idle link the end takes one latency.
        var idle = LinkSchedule(link: link(), random: SplitMix64(seed: 3))
        #expect(approximately(idle.endArrived(at: 7), 7.05))
    }

    @Test func lostHandshakePacketsWaitOneSecondThenTwo() {
        let loss = NetworkProfile.LossStall(probability: 0.5)
        var once = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0, 0.9]))
        #expect(approximately(once.handshakePacketSent(at: 0).releaseAt, 0.05 + 1))
        var twice = LinkSchedule(link: link(loss: loss), random: ScriptedRandom([0, 0, 0.9]))
        let packet = twice.handshakePacketSent(at: 0)
        #expect(packet.losses == 2)
        #expect(approximately(packet.releaseAt, 0.05 + 1 + 2))
        #expect(twice.backoff == 0)
    }
}

@Suite("Connection schedule", .timeLimit(.minutes(3)))
struct ConnectionScheduleTests {
    private static let asymmetric = NetworkProfile(
        name: "asymmetric", uplink: link(latency: .milliseconds(100)), downlink: link(latency: .milliseconds(50)))

    @Test func nothingLeavesTheClientBeforeTheHandshakeRoundTrip() {
        var schedule = ConnectionSchedule(profile: Self.asymmetric, seed: 1, openedAt: 10)
        #expect(approximately(schedule.establishedAt, 10.15))
        #expect(schedule.resetAt == nil)
        #expect(approximately(schedule.uplink.segmentArrived(byteCount: 10, at: 10).releaseAt, 10.25))
        #expect(approximately(schedule.downlink.segmentArrived(byteCount: 10, at: 10).releaseAt, 10.2))
    }

    @Test func resetDecisions() {
        var random = SplitMix64(seed: 5)
        #expect(ConnectionSchedule.resetTime(for: .none, openedAt: 3, using: &random) == nil)
        #expect(random == SplitMix64(seed: 5), "no draw when resets are off")
        let atOnce = NetworkProfile.Resets(probability: 1, meanDelay: .zero)
        #expect(ConnectionSchedule.resetTime(for: atOnce, openedAt: 3, using: &random) == 3)
        let later = NetworkProfile.Resets(probability: 1, meanDelay: .seconds(5))
        #expect((ConnectionSchedule.resetTime(for: later, openedAt: 3, using: &random) ?? 0) > 3)
    }

    @Test func resetsFollowTheProbabilityAndTheMeanDelay() {
        let resets = NetworkProfile.Resets(probability: 0.25, meanDelay: .seconds(4))
        let delays = (0..<4000).compactMap { seed -> Double? in
            var random = SplitMix64(seed: UInt64(seed))
            return ConnectionSchedule.resetTime(for: resets, openedAt: 0, using: &random)
        }
        #expect((900...1100).contains(delays.count))
        #expect(abs(delays.reduce(0, +) / Double(delays.count) - 4) < 0.4)
    }

    @Test func theSameSeedMakesTheSameDecisions() {
        func run(_ seed: UInt64) -> [Double] {
            var schedule = ConnectionSchedule(profile: .wifi50Loss, seed: seed, openedAt: 0)
            let uplink = schedule.uplink.bytesArrived(20_000, at: 0.5).map(\.releaseAt)
            let downlink = schedule.downlink.bytesArrived(20_000, at: 0.7).map(\.releaseAt)
            return [schedule.establishedAt, schedule.resetAt ?? -1] + uplink + downlink
        }
        #expect(run(11) == run(11))
        #expect(run(11) != run(12))
        let seeds = (0..<100).map { ConnectionSchedule.connectionSeed(proxySeed: 7, index: $0) }
        #expect(Set(seeds).count == 100)
        #expect(seeds == (0..<100).map { ConnectionSchedule.connectionSeed(proxySeed: 7, index: $0) })
        #expect(seeds[0] != ConnectionSchedule.connectionSeed(proxySeed: 8, index: 0))
    }

    @Test func wifi30LossStallsAboutThreeSegmentsInTen() {
        var schedule = ConnectionSchedule(profile: .wifi30Loss, seed: 3, openedAt: 0)
        let releases = (0..<5000).map { schedule.downlink.segmentArrived(byteCount: 1448, at: Double($0)) }
        let stalled = releases.filter { $0.losses > 0 }.count
        #expect((1350...1650).contains(stalled))
        #expect(releases.allSatisfy { $0.stall <= 15 * 6.4 })
    }
    @Test func theDelayFloorOfAQuantileIsTheLatencyPlusTheLossesItCovers() {
        // 30 %: 0.3³ = 2.7 % ≤ 5 % < 0.3² = 9 %, so the p95 waits for two losses (200 + 400 ms).
        #expect(
            abs(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.wifi30Loss.downlink, quantile: 0.95) - 0.61)
                < 1e-9)
        // 50 %: four losses, 200 + 400 + 800 + 1600 ms.
        #expect(
            abs(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.wifi50Loss.downlink, quantile: 0.95) - 3.01)
                < 1e-9)
        // The median at 50 %: 0.5¹ = 50 % ≤ 50 %, no loss.
        #expect(
            abs(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.wifi50Loss.downlink, quantile: 0.5) - 0.01)
                < 1e-9)
        #expect(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.good.downlink, quantile: 0.99) == 0.01)
        // poor_3g: 1 % loss never reaches the p95; its 400 ms RTO counts from the p99.5 on.
        #expect(
            abs(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.poor3G.downlink, quantile: 0.95) - 0.1) < 1e-9)
        #expect(
            abs(LinkSchedule<SplitMix64>.delayFloor(of: NetworkProfile.poor3G.downlink, quantile: 0.995) - 0.5) < 1e-9)
    }

    @Test func theFloorHoldsForSimulatedSegments() {
        // The arithmetic is a floor: the simulated p95 is at least it.
        for profile in [NetworkProfile.wifi30Loss, .wifi50Loss] {
            var delays: [Double] = []
            for seed in 0..<4000 {
                var schedule = LinkSchedule(link: profile.downlink, random: SplitMix64(seed: UInt64(seed)))
                delays.append(schedule.segmentArrived(byteCount: 400, at: 0).releaseAt)
            }
            delays.sort()
            let p95 = delays[Int(0.95 * Double(delays.count)) - 1]
            #expect(
                p95 >= LinkSchedule<SplitMix64>.delayFloor(of: profile.downlink, quantile: 0.95) - 1e-9,
                "\(profile.name)")
        }
    }
}
