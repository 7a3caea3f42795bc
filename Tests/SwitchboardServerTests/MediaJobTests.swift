import Foundation
import SwitchboardTesting
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// Media withdrawals of social changes: written with the change, carried out after it, and
/// retried until the media backend confirms (issue 20 §7).
@Suite("Media withdrawals that are never lost", .serialized, .timeLimit(.minutes(3)))
struct MediaJobTests {
    private func activeCall(_ world: CallWorld) async throws -> (CallWorld.Person, CallWorld.Person, CallInfo) {
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(await world.act("accept", call.id, by: bob).status == 200)
        return (alice, bob, call)
    }

    private func pending(_ world: CallWorld) async throws -> [OutboxJob] {
        try await world.app.application.store.snapshot { try $0.outboxJobs.due(at: .max, limit: 100, kinds: [.media], skipping: [], busyTargets: []) }
    }

    @Test func theRetryPauseDoublesUpToAMinute() {
        #expect((0..<9).map { MediaWithdrawals.retryDelay(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    @Test func aBlockWhileLiveKitIsDownEndsTheCallAtOnceAndEmptiesTheRoomOnceLiveKitIsBack() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let (alice, bob, call) = try await activeCall(world)
        livekit.set(.fail)
        #expect(await world.app.request("PUT", "/blocks/\(bob.id)", headers: alice.headers).status == 200)
        // The block and the end of the call do not wait for LiveKit.
        let ended = try await world.get(call.id, by: alice)
        #expect(ended.state == .ended && ended.endReason == .blocked)
        // The withdrawal was tried after the commit (woken by it) and failed: it waits a second.
        #expect(await eventually { livekit.requests.filter { $0.method == "DeleteRoom" }.count == 1 })
        #expect(await eventually { (try? await pending(world).first?.attempts) == 1 })
        let job = try #require(try await pending(world).first)
        #expect(MediaWithdrawals.action(of: job)?.action == .deleteRoom("call_\(call.id)"))
        #expect(job.lastError?.isEmpty == false)
        // LiveKit is back; a second later the job is tried again, confirmed, and gone.
        livekit.set(.normal)
        // The runner sleeps on the manual clock again before the clock moves.
        #expect(await eventually { world.clock.sleeperCount(of: OutboxRunner.loopName) >= 1 })
        world.clock.advance(seconds: 1)
        #expect(await eventually { (try? await pending(world).isEmpty) == true })
        let deletes = livekit.requests.filter { $0.method == "DeleteRoom" }
        #expect(deletes.count == 2)
        #expect(deletes.last?.body == ["room": "call_\(call.id)"] && deletes.last?.authorized == true)
        await livekit.stop()
    }

    @Test func removingAGroupMemberTakesThemOutOfTheRoomAndTheLastOneOutClosesIt() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let owner = try await world.person("owner"), anna = try await world.person("anna"),
            bert = try await world.person("bert")
        let group = try await world.group(owner, [anna, bert])
        let call = try #require(await world.call(owner, "group", group).call)
        #expect(await world.act("accept", call.id, by: anna).status == 200)
        #expect(
            await world.app.request("DELETE", "/groups/\(group)/members/\(anna.id)", headers: owner.headers).status
                == 204)
        #expect(await eventually { livekit.requests.contains { $0.method == "RemoveParticipant" } })
        #expect(
            livekit.requests.filter { $0.method == "RemoveParticipant" }.map(\.body) == [
                ["room": "call_\(call.id)", "identity": anna.id]
            ])
        #expect(await eventually { (try? await pending(world).isEmpty) == true })
        // Dissolving the group ends the call: the room goes.
        #expect(await world.app.request("DELETE", "/groups/\(group)", headers: owner.headers).status == 204)
        #expect(await eventually { livekit.requests.contains { $0.method == "DeleteRoom" } })
        #expect(try await world.get(call.id, by: owner).endReason == .groupDissolved)
        await livekit.stop()
    }

    @Test func aRefusedChangeWithdrawsNothing() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let owner = try await world.person("owner"), anna = try await world.person("anna")
        let group = try await world.group(owner, [anna])
        let call = try #require(await world.call(owner, "group", group).call)
        #expect(await world.act("accept", call.id, by: anna).status == 200)
        // Anna is no owner: she may not remove the owner, nor dissolve the group.
        #expect(
            await world.app.request("DELETE", "/groups/\(group)/members/\(owner.id)", headers: anna.headers).status
                == 403)
        #expect(await world.app.request("DELETE", "/groups/\(group)", headers: anna.headers).status == 403)
        try await world.app.application.outbox.drainOnce()
        #expect(livekit.requests.isEmpty)
        #expect(try await pending(world).isEmpty)
        #expect(try await world.get(call.id, by: owner).state == .active)
        await livekit.stop()
    }

    @Test func withoutManagedRoomsNoJobIsWritten() async throws {
        var configuration = ServerConfiguration()
        configuration.media.backend = .none
        let world = try CallWorld(configuration: configuration)
        defer { world.close() }
        let (alice, bob, call) = try await activeCall(world)
        #expect(await world.app.request("DELETE", "/friends/\(bob.id)", headers: alice.headers).status == 204)
        #expect(try await world.get(call.id, by: alice).endReason == .unfriended)
        #expect(try await pending(world).isEmpty)
    }
}
