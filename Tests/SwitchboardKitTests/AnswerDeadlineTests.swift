import Foundation
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// The network-quality estimator's window and math (SPEC §4 rule 12).
@Suite("Network-quality estimator", .timeLimit(.minutes(1)))
struct NetworkQualityEstimatorTests {
    @Test(arguments: [
        (0.0, 0.0, 1.5), (0.1, 0, 1.7), (0.5, 0, 2.5), (1, 0, 3.5), (3, 0, 3.5),
        (0, 0.1, 2.0), (0.2, 0.2, 2.9), (0.1, 0.3, 3.2), (0.2, 0.3, 3.4), (0.3, 0.3, 3.5), (0, 1, 3.5), (-1, -1, 1.5),
        (0, 7, 3.5),
    ])
    func theDeadlineIsTheClampedFormula(_ rtt: Double, _ loss: Double, _ expected: Double) {
        #expect(abs(NetworkQualityEstimator.answerDeadline(roundTrip: rtt, loss: loss) - expected) < 1e-9)
    }

    @Test func withNothingKnownTheDeadlineIsTheLongest() {
        let estimator = NetworkQualityEstimator()
        #expect(estimator.roundTrip(at: 0) == nil)
        #expect(estimator.loss(at: 0) == 0)
        #expect(estimator.answerDeadline(at: 0) == 3.5)
    }

    @Test func roundTripIsTheMeanAndLossTheShareUnanswered() {
        var estimator = NetworkQualityEstimator()
        estimator.answered(after: 0.1, at: 1)
        estimator.answered(after: 0.3, at: 2)
        estimator.lost(at: 3)
        estimator.answered(after: 0.2, at: 3.5)
        #expect(abs((estimator.roundTrip(at: 4) ?? -1) - 0.2) < 1e-9)
        #expect(estimator.loss(at: 4) == 0.25)
        #expect(abs(estimator.answerDeadline(at: 4) - 3.15) < 1e-9, "1.5 + 0.4 + 1.25")
    }

    @Test func samplesOlderThanFiveSecondsAge() {
        var estimator = NetworkQualityEstimator()
        estimator.lost(at: 10)
        estimator.answered(after: 0.05, at: 12)
        #expect(estimator.loss(at: 15) == 0.5, "5 s old still counts")
        #expect(estimator.loss(at: 15.001) == 0, "the loss aged out")
        #expect(abs(estimator.answerDeadline(at: 15.001) - 1.6) < 1e-9)
        #expect(estimator.answerDeadline(at: 17.5) == 3.5, "nothing left: nothing known")
        estimator.answered(after: 0.05, at: 30)
        #expect(estimator.samples.count == 1, "aged samples are dropped when new ones come")
    }

    @Test func atMostFiftySamplesCountTheNewest() {
        var estimator = NetworkQualityEstimator()
        for index in 0..<10 { estimator.lost(at: 1 + Double(index) * 0.01) }
        for index in 0..<50 { estimator.answered(after: 0.1, at: 2 + Double(index) * 0.01) }
        #expect(estimator.samples.count == 50)
        #expect(estimator.loss(at: 3) == 0, "the ten losses were the oldest")
        estimator.lost(at: 3)
        #expect(estimator.samples.count == 50)
        #expect(estimator.loss(at: 3) == 0.02)
    }

    @Test func aLateSampleKeepsTimeOrder() {
        var estimator = NetworkQualityEstimator()
        estimator.answered(after: 0.1, at: 5)
        estimator.lost(at: 4)
        #expect(estimator.samples.map(\.time) == [4, 5])
        #expect(estimator.loss(at: 9.5) == 0, "the late loss ages by its own time")
    }

    @Test func aMeasuringClientRecordsRoundTripsAndLosses() async {
        let now = ManualClock()
        let quality = NetworkQualityMonitor(now: { now.elapsed })
        let up = ScriptedTransport(status: 200, body: #"[]"#)
        let client = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: up, networkQuality: quality)
        _ = try? await client.activeCalls()
        #expect(quality.current.samples == 1)
        #expect(quality.current.loss == 0)
        let down = ScriptedTransport { _ in throw URLError(.timedOut) }
        let failing = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: down, networkQuality: quality)
        _ = try? await failing.activeCalls()
        _ = try? await failing.events(after: 0, wait: 20)
        #expect(quality.current.samples == 2, "a long poll's hold is no round trip")
        #expect(quality.current.loss == 0.5)
    }
}

/// The adaptive answer deadline enforced by the coordinator (rules 5 and 12), on a manual clock.
@Suite("Adaptive answer deadline", .timeLimit(.minutes(2)))
struct AdaptiveAnswerDeadlineTests {
    private final class Rig: Sendable {
        let clock = ManualClock()
        let backend: InMemoryCallBackend
        let system: SimulatedCallSystem
        let quality: NetworkQualityMonitor
        let coordinator: CallCoordinator

        /// `viaBackend`: the coordinator finds the monitor on its backend (as on a
        /// `SwitchboardClient`) rather than being given it.
        init(adaptive: Bool, viaBackend: Bool = false) {
            let clock = clock
            system = SimulatedCallSystem(clock: clock)
            quality = NetworkQualityMonitor(now: { clock.elapsed })
            backend = InMemoryCallBackend(networkQuality: viaBackend ? quality : nil)
            let media = SimulatedMedia(clock: clock)
            media.attach(system)
            coordinator = CallCoordinator(
                userID: backend.me, backend: backend, callSystem: system, media: { media.makeSession($0) },
                clock: clock,
                configuration: CallLedger.Configuration(adaptiveAnswerDeadline: adaptive),
                networkQuality: viaBackend ? nil : quality)
        }

        deinit { coordinator.shutdown() }

        func run(_ seconds: Double) async { await clock.run(seconds: seconds, step: 0.1, settling: system) }

        /// A ringing call whose answer will wait for its media token until released.
        func ringAndAnswerStuck() async throws -> CallInfo {
            let call = backend.ring()
            #expect(system.deliverVoIPPush(backend.push(for: call), to: coordinator))
            await run(0.5)
            backend.hold("mediaToken")
            try system.userAnswers(CallIdentity.uuid(forCallID: call.id))
            return call
        }

        func state(_ call: CallInfo) -> SimulatedCallSystem.Call.State? {
            system.call(CallIdentity.uuid(forCallID: call.id))?.state
        }

        func endings(_ call: CallInfo) -> Int {
            let short = String(CallIdentity.uuid(forCallID: call.id).uuidString.prefix(8)).lowercased()
            return system.log.filter { $0.text.hasPrefix("ended \(short) ") }.count
        }

        func answerFailed(_ call: CallInfo) -> Bool {
            let short = String(CallIdentity.uuid(forCallID: call.id).uuidString.prefix(8)).lowercased()
            return system.log.map(\.text).contains("answer \(short) failed")
        }

        /// Samples as fast requests (`rtt` each) would leave them, now.
        func measure(roundTrip rtt: Double, count: Int = 5) {
            for _ in 0..<count { quality.recordAnswer(sentAt: quality.moment - rtt) }
        }
    }

    @Test(arguments: [false, true])
    func onAGoodNetworkAStuckAnswerFailsAtTheShortDeadlineAndEndsOnce(viaBackend: Bool) async throws {
        let rig = Rig(adaptive: true, viaBackend: viaBackend)
        rig.measure(roundTrip: 0.05)  // 1.5 + 0.1 = 1.6 s
        let call = try await rig.ringAndAnswerStuck()
        await rig.run(1.4)
        #expect(rig.state(call) == .ringing, "still within 1.6 s")
        #expect(!rig.answerFailed(call))
        await rig.run(0.4)
        #expect(rig.answerFailed(call), "\(rig.system.log)")
        #expect(rig.state(call) == .ended)
        #expect(rig.system.call(CallIdentity.uuid(forCallID: call.id))?.endReason == .failed)
        rig.backend.release("mediaToken")
        await rig.run(2)
        #expect(rig.endings(call) == 1, "reported ended once: no zombie, no second ending")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.info(call.id)?.state == .ended, "the caller is not left in a dead call")
    }

    @Test func withoutTheOptInTheFixedDeadlineStays() async throws {
        let rig = Rig(adaptive: false)
        rig.measure(roundTrip: 0.05)
        let call = try await rig.ringAndAnswerStuck()
        await rig.run(5)
        #expect(rig.state(call) == .ringing, "10 s fixed, whatever the network says")
        await rig.run(5.5)
        #expect(rig.answerFailed(call))
        #expect(rig.endings(call) == 1)
        rig.backend.release("mediaToken")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func theDeadlineIsTheOneComputedWhenTheAnswerIsProcessed() async throws {
        let rig = Rig(adaptive: true)
        rig.measure(roundTrip: 0.05)  // good while it rings…
        let call = rig.backend.ring()
        #expect(rig.system.deliverVoIPPush(rig.backend.push(for: call), to: rig.coordinator))
        await rig.run(0.5)
        for _ in 0..<5 { rig.quality.recordLoss() }  // …then requests get lost: 1.5 + 0.1 + 2.5 → 3.5
        rig.backend.hold("mediaToken")
        try rig.system.userAnswers(CallIdentity.uuid(forCallID: call.id))
        await rig.run(3.2)
        #expect(rig.state(call) == .ringing, "the lossy network's 3.5 s, not the 1.6 s of before")
        await rig.run(0.5)
        #expect(rig.answerFailed(call))
        #expect(rig.endings(call) == 1)
        rig.backend.release("mediaToken")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func aNetworkGettingWorseWhileTheAnswerWaitsMovesTheDeadline() async throws {
        let rig = Rig(adaptive: true)
        rig.measure(roundTrip: 0.05)
        let call = try await rig.ringAndAnswerStuck()  // 1.6 s when the answer came
        await rig.run(1.0)
        for _ in 0..<5 { rig.quality.recordLoss() }  // 3.5 s now
        await rig.run(1.5)
        #expect(rig.state(call) == .ringing, "2.5 s waited: past the first deadline, within the new one")
        await rig.run(1.2)
        #expect(rig.answerFailed(call))
        #expect(rig.endings(call) == 1)
        rig.backend.release("mediaToken")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func anAnswerThatMakesItInTimeIsFulfilled() async throws {
        let rig = Rig(adaptive: true)
        rig.measure(roundTrip: 0.05)
        let call = rig.backend.ring()
        #expect(rig.system.deliverVoIPPush(rig.backend.push(for: call), to: rig.coordinator))
        await rig.run(0.5)
        try rig.system.userAnswers(CallIdentity.uuid(forCallID: call.id))
        await rig.run(3)
        #expect(rig.state(call) == .connected)
        #expect(!rig.answerFailed(call))
        #expect(rig.endings(call) == 0)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }
}
