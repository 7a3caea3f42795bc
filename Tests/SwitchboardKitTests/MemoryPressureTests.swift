import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// The memory-pressure levels, their hysteresis and their plans (SPEC §4 rule 12).
@Suite("Memory-pressure policy", .timeLimit(.minutes(1)))
struct MemoryPressurePolicyTests {
    typealias Level = MemoryPressureLevel

    @Test(arguments: [
        (0.0, Level.safe), (119.99, .safe), (120, .warning), (179.99, .warning), (180, .critical),
        (249.99, .critical), (250, .fatal), (4000, .fatal),
    ])
    func thresholdsGoingUp(_ megabytes: Double, _ expected: Level) {
        var policy = MemoryPressurePolicy()
        let plan = policy.sampled(megabytes: megabytes)
        #expect(policy.level == expected)
        #expect(plan?.level == (expected == .safe ? nil : expected), "a plan only for a change")
    }

    @Test func aJumpSkipsLevelsBothWays() {
        var policy = MemoryPressurePolicy()
        #expect(policy.sampled(megabytes: 260)?.level == .fatal)
        #expect(policy.sampled(megabytes: 50)?.level == .safe)
    }

    @Test(arguments: [
        // From each level: the footprint just inside the margin keeps it, just past it drops it.
        (130.0, 110.01, Level.warning), (130, 110, .warning), (130, 109.99, .safe),
        (200, 170.01, .critical), (200, 169.99, .warning), (200, 109.99, .safe),
        (260, 240.01, .fatal), (260, 239.99, .critical), (260, 175, .critical), (260, 169.99, .warning),
    ])
    func goingDownNeedsTenMegabytesBelowTheThreshold(_ from: Double, _ to: Double, _ expected: Level) {
        var policy = MemoryPressurePolicy()
        _ = policy.sampled(megabytes: from)
        _ = policy.sampled(megabytes: to)
        #expect(policy.level == expected)
    }

    @Test func aFootprintWaveringAroundAThresholdChangesTheLevelOnce() {
        var policy = MemoryPressurePolicy()
        var changes: [Level] = []
        for megabytes in [119.0, 121, 118, 122, 115, 120.5, 111, 179, 112] {
            if let plan = policy.sampled(megabytes: megabytes) { changes.append(plan.level) }
        }
        #expect(changes == [.warning])
        if let plan = policy.sampled(megabytes: 100) { changes.append(plan.level) }
        #expect(changes == [.warning, .safe])
    }

    @Test func wavingAroundFatalEndsCallsOnlyOnEachEntry() {
        var policy = MemoryPressurePolicy()
        let plans = [240.0, 251, 245, 252, 241, 239, 251].compactMap { policy.sampled(megabytes: $0) }
        #expect(plans.map(\.level) == [.critical, .fatal, .critical, .fatal])
        #expect(plans.filter(\.endsCalls).count == 2)
    }

    @Test func bytesAreMebibytes() {
        var policy = MemoryPressurePolicy()
        #expect(policy.sampled(residentBytes: 120 * 1_048_576 - 1) == nil)
        #expect(policy.sampled(residentBytes: 120 * 1_048_576)?.level == .warning)
    }

    @Test func eachLevelShedsMoreThanTheOneBelow() {
        let plans = Level.allCases.map(MemoryShedPlan.plan(for:))
        #expect(plans.map(\.caches) == [.keep, .trimOptional, .purgeAll, .purgeAll])
        #expect(
            plans.map(\.video) == [
                .unlimited, .capped(maxHeight: 720, maxBitrate: 1_200_000),
                .capped(maxHeight: 360, maxBitrate: 400_000), .off,
            ])
        #expect(plans.map(\.endsCalls) == [false, false, false, true])
    }

    @Test func theMonitorTellsEveryListenerOfChangesOnly() {
        let footprint = SimulatedMemoryFootprint(megabytes: 90)
        let memory = MemoryPressureMonitor(sampler: footprint)
        let heard = Mutex<[Level]>([])
        memory.onChange { plan in heard.withLock { $0.append(plan.level) } }
        #expect(memory.sample() == nil)
        footprint.megabytes = 185
        #expect(memory.sample()?.level == .critical)
        #expect(memory.sample() == nil, "the same level again")
        footprint.megabytes = nil
        #expect(memory.sample() == nil, "an unreadable footprint changes nothing")
        footprint.megabytes = 100
        memory.sample()
        #expect(heard.withLock { $0 } == [.critical, .safe])
        #expect(memory.level == .safe)
    }
}

/// Memory pressure through the coordinator: media sheds, `fatal` ends calls cleanly.
@Suite("Memory pressure ends calls cleanly", .timeLimit(.minutes(2)))
struct MemoryPressureCoordinatorTests {
    private final class Rig: Sendable {
        let clock = ManualClock()
        let backend = InMemoryCallBackend()
        let system: SimulatedCallSystem
        let media: SimulatedMedia
        let footprint = SimulatedMemoryFootprint(megabytes: 80)
        let memory: MemoryPressureMonitor
        let coordinator: CallCoordinator

        init() {
            let clock = clock
            system = SimulatedCallSystem(clock: clock)
            media = SimulatedMedia(clock: clock)
            media.attach(system)
            memory = MemoryPressureMonitor(sampler: footprint)
            let media = media
            coordinator = CallCoordinator(
                userID: backend.me, backend: backend, callSystem: system, media: { media.makeSession($0) },
                clock: clock, memoryPressure: memory)
        }

        deinit { coordinator.shutdown() }

        func run(_ seconds: Double) async { await clock.run(seconds: seconds, step: 0.1, settling: system) }

        func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }

        func endings(_ call: CallInfo) -> Int {
            let short = String(uuid(call).uuidString.prefix(8)).lowercased()
            return system.log.filter { $0.text.hasPrefix("ended \(short) ") }.count
        }

        /// A call answered here and connected.
        func connectedCall() async throws -> CallInfo {
            let call = backend.ring()
            #expect(system.deliverVoIPPush(backend.push(for: call), to: coordinator))
            await run(0.5)
            try system.userAnswers(uuid(call))
            await run(1)
            try #require(system.call(uuid(call))?.state == .connected)
            return call
        }
    }

    @Test func eachLevelChangeReachesTheCallsMediaSession() async throws {
        let rig = Rig()
        let call = try await rig.connectedCall()
        for megabytes in [130.0, 190, 150, 80] {
            rig.footprint.megabytes = megabytes
            rig.memory.sample()
        }
        let session = try #require(rig.media.session(call.id))
        #expect(session.status.shedLevels == [.warning, .critical, .warning, .safe])
        #expect(rig.system.call(rig.uuid(call))?.state == .connected, "only fatal ends a call")
        #expect(rig.endings(call) == 0)
    }

    @Test func aSessionStartedUnderPressureShedsFromTheStart() async throws {
        let rig = Rig()
        rig.footprint.megabytes = 200
        rig.memory.sample()
        let call = try await rig.connectedCall()
        #expect(try #require(rig.media.session(call.id)).status.shedLevels == [.critical])
    }

    @Test func fatalEndsEveryLiveCallAsFailedOnce() async throws {
        let rig = Rig()
        let active = try await rig.connectedCall()
        let ringing = rig.backend.ring(from: "carol")
        #expect(rig.system.deliverVoIPPush(rig.backend.push(for: ringing), to: rig.coordinator))
        await rig.run(0.5)
        rig.footprint.megabytes = 260
        rig.memory.sample()
        await rig.run(1)
        for call in [active, ringing] {
            #expect(rig.system.call(rig.uuid(call))?.state == .ended)
            #expect(rig.system.call(rig.uuid(call))?.endReason == .failed)
            #expect(rig.endings(call) == 1)
            #expect(rig.backend.info(call.id)?.state == .ended, "nobody is left in a dead call")
        }
        #expect(try #require(rig.media.session(active.id)).status.left)
        #expect(rig.coordinator.liveCallIDs.isEmpty)
        // Still fatal, then flapping back into it: nothing is ended twice.
        for megabytes in [255.0, 230, 262] {
            rig.footprint.megabytes = megabytes
            rig.memory.sample()
        }
        await rig.run(1)
        #expect(rig.endings(active) == 1)
        #expect(rig.endings(ringing) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func fatalWhileAnAnswerWaitsFailsTheActionOnce() async throws {
        let rig = Rig()
        let call = rig.backend.ring()
        #expect(rig.system.deliverVoIPPush(rig.backend.push(for: call), to: rig.coordinator))
        await rig.run(0.5)
        rig.backend.hold("mediaToken")
        try rig.system.userAnswers(rig.uuid(call))
        await rig.run(0.3)
        rig.footprint.megabytes = 300
        rig.memory.sample()
        await rig.run(0.5)
        rig.backend.release("mediaToken")
        await rig.run(11)
        let short = String(rig.uuid(call).uuidString.prefix(8)).lowercased()
        #expect(rig.system.log.map(\.text).contains("answer \(short) failed"), "\(rig.system.log)")
        #expect(rig.endings(call) == 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }
}
