import Foundation
import Testing
@testable import SwitchboardServer
import SwitchboardTesting

/// The background loops sleep on the store's clock, so a manual clock drives them: no real
/// second has to pass for a sweep to run.
@Suite("Background loops on the injected clock", .timeLimit(.minutes(2)))
struct BackgroundLoopClockTests {
    @Test func everyLoopSleepsOnTheManualClockAndAnAdvanceRunsTheRingSweep() async throws {
        let world = try CallWorld()
        defer { world.close() }
        for loop in ["ring timeout sweep", "WAL checkpoint", "event pruning", PushDispatcher.loopName] {
            #expect(await eventually { world.clock.sleeperCount(of: loop) == 1 }, "\(loop) sleeps on the manual clock")
        }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        // Past the 45 s ring timeout on the manual clock: the sweep wakes and ends the call
        // (nothing calls sweepRingTimeouts here; real time barely moves).
        world.clock.advance(seconds: 46)
        #expect(try await eventuallyTrying { try await world.get(call.id, by: alice).endReason == .missed })
        #expect(await eventually { world.clock.sleeperCount(of: "ring timeout sweep") == 1 }, "and goes back to sleep on it")
    }
}
