import Foundation
import Testing
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardTesting

/// The background loops sleep on the store's clock, so a manual clock drives them: no real
/// second has to pass for a sweep to run.
@Suite("Background loops on the injected clock", .timeLimit(.minutes(2)))
struct BackgroundLoopClockTests {
    @Test func everyLoopSleepsOnTheManualClockAndAnAdvanceRunsTheRingSweep() async throws {
        let world = try CallWorld()
        defer { world.close() }
        var loops = ["ring timeout sweep", "event pruning", "event hub sweep", PushDispatcher.loopName]
        // The WAL checkpoint is SQLite's; PostgreSQL checkpoints by itself.
        if world.app.application.database is Database { loops.append("WAL checkpoint") }
        for loop in loops {
            #expect(await eventually { world.clock.sleeperCount(of: loop) == 1 }, "\(loop) sleeps on the manual clock")
        }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        // Past the 45 s ring timeout on the manual clock: the sweep wakes and ends the call
        // (nothing calls sweepRingTimeouts here; real time barely moves).
        world.clock.advance(seconds: 46)
        #expect(try await eventuallyTrying { try await world.get(call.id, by: alice).endReason == .missed })
        #expect(
            await eventually { world.clock.sleeperCount(of: "ring timeout sweep") == 1 }, "and goes back to sleep on it"
        )
    }

    /// A held long poll times out on the manual clock: it is still held however long real time
    /// waits, and answers (empty) once the clock passes its `wait`.
    @Test func aLongPollTimesOutWhenTheManualClockPassesItsWait() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice")
        let hub = world.app.application.store.hub
        let me =
            try JSONSerialization.jsonObject(
                with: Data(await world.app.request("GET", "/me", headers: alice.headers).bodyBytes)) as? [String: Any]
        let cursor = try #require(me?["eventCursor"] as? Int)
        let poll = Task { await world.app.request("GET", "/events?after=\(cursor)&wait=20", headers: alice.headers) }
        #expect(await eventually { hub.waiterCount == 1 })
        world.clock.advance(seconds: 19)
        #expect(await eventually { world.clock.sleeperCount(of: "event hub sweep") == 1 })
        #expect(hub.waiterCount == 1, "19 s on the clock: still held")
        world.clock.advance(seconds: 2)
        let answer = try await value(of: poll)
        #expect(answer.status == 200)
        #expect((answer.json?["events"] as? [Any])?.isEmpty == true)
        #expect(hub.waiterCount == 0)
    }
}
