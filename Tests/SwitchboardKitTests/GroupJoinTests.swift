import Foundation
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// Joining an active group call one missed or declined (`POST /calls/{id}/join`).
@Suite("Joining a group call late", .timeLimit(.minutes(3)))
struct GroupJoinTests {
    /// A group call that rang me, that I declined, and that others are now in.
    static func declinedGroupCall(_ rig: ScenarioRig) async throws -> CallInfo {
        var call = rig.backend.ring()
        rig.backend.change(call.id) { $0.scopeKind = .group }
        call = try #require(rig.backend.info(call.id))
        rig.push(call)
        await rig.run(seconds: 0.5)
        try rig.system.userEnds(rig.uuid(call))
        await rig.run(seconds: 0.5)
        let active = rig.backend.change(call.id) { call in
            call.state = .active
            call.participants.append(CallParticipantInfo(userId: "bob", joinedAt: call.createdAt, leftAt: nil))
        }
        await rig.events(active)
        return call
    }

    @Test func aDeclinedGroupCallCanBeJoinedAndConnectsThroughTheCallSystem() async throws {
        let rig = ScenarioRig(.ours)
        let call = try await Self.declinedGroupCall(rig)
        #expect(rig.backend.requests.contains("decline"))
        #expect(rig.system.call(rig.uuid(call))?.state == .ended)
        let coordinator = try #require(rig.coordinator as? CallCoordinator)

        try await coordinator.joinCall(call.id, handle: "Team")
        await rig.run(seconds: 1)
        #expect(rig.system.call(rig.uuid(call))?.state == .connected, "\(rig.system.log)")
        #expect(coordinator.call(call.id)?.stage == .active)
        #expect(rig.media.session(call.id)?.status.audioFlowing == true)
        #expect(rig.backend.info(call.id)?.participants.contains { $0.userId == "me" && $0.leftAt == nil } == true)
        #expect(rig.system.violations.isEmpty)

        try rig.system.userEnds(rig.uuid(call))
        await rig.run(seconds: 0.5)
        #expect(rig.backend.requests.split(separator: "join").last?.contains("leave") == true)
        #expect(rig.system.liveCalls.isEmpty && rig.system.violations.isEmpty)
    }

    @Test func aJoinTheCallSystemRefusesLeavesTheCallOnTheServer() async throws {
        let rig = ScenarioRig(.ours) { $0.maximumCallGroups = 1 }
        let call = try await Self.declinedGroupCall(rig)
        // Another app's call occupies the one call group.
        rig.system.reportNewIncomingCall(uuid: UUID(), update: CallUpdate(handle: "other")) { _ in }
        await rig.settle()
        let coordinator = try #require(rig.coordinator as? CallCoordinator)
        try await coordinator.joinCall(call.id, handle: "Team")
        await rig.run(seconds: 1)
        #expect(coordinator.call(call.id)?.stage == .ended)
        let requests = rig.backend.requests
        #expect(requests.split(separator: "join").last?.contains("leave") == true, "\(requests)")
        #expect(rig.backend.info(call.id)?.participants.contains { $0.userId == "me" && $0.leftAt == nil } == false)
    }
}

/// A refreshed token reaches the coordinator without losing its calls.
@Suite("Coordinator session", .timeLimit(.minutes(3)))
struct CoordinatorSessionTests {
    @Test func requestsAfterUseBackendGoToTheNewOne() async throws {
        let rig = ScenarioRig(.ours)
        let coordinator = try #require(rig.coordinator as? CallCoordinator)
        let refreshed = InMemoryCallBackend()
        coordinator.use(backend: refreshed)
        let call = refreshed.ring()
        rig.system.deliverVoIPPush(refreshed.push(for: call), to: coordinator)
        await rig.run(seconds: 0.5)
        #expect(refreshed.requests.contains("fetch"))
        #expect(rig.backend.requests.isEmpty, "the old token is not used any more")
        #expect(rig.system.call(rig.uuid(call))?.state == .ringing)
    }

    @Test func aWakingPushReadsTheCallOnceNotOncePerPath() async throws {
        let rig = ScenarioRig(.ours)
        let call = rig.backend.ring()
        rig.push(call)
        await rig.run(seconds: 0.5)
        #expect(rig.backend.requests.filter { $0 == "fetch" }.count == 1, "\(rig.backend.requests)")
        // A stale push is still caught by that one read.
        let stale = rig.backend.ring()
        rig.backend.endCall(stale.id, reason: .missed)
        rig.push(stale)
        await rig.run(seconds: 0.5)
        #expect(rig.system.call(rig.uuid(stale))?.endReason == .unanswered)
    }
}
