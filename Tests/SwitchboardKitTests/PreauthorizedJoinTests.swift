import Foundation
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// Joining a meeting's group call with a pre-authorisation: the media token comes with the join,
/// and without a valid one the join takes its usual path.
@Suite("Joining with a pre-authorisation", .timeLimit(.minutes(3)))
struct PreauthorizedJoinTests {
    static let stamp = "2026-12-03T09:00:00.000Z"
    static let groupCall = CallInfo(
        id: "c1", scopeKind: .group, scopeId: "g1", mode: .audio, state: .active, endReason: nil, createdBy: "bob",
        createdAt: stamp,
        answeredAt: stamp, endedAt: nil, invitations: [],
        participants: [CallParticipantInfo(userId: "bob", joinedAt: stamp, leftAt: nil)])
    static let token = MediaToken(url: "wss://media.test", token: "with-join", expiresAt: stamp)

    // MARK: The ledger

    @Test func aJoinAnsweredWithATokenJoinsMediaWithoutAskingForOne() {
        var ledger = CallLedger(userID: "me")
        let effects = ledger.callJoined(Self.groupCall, handle: "Team", media: Self.token)
        #expect(effects.contains(.joinMedia(callID: "c1", Self.token)))
        #expect(!effects.contains(.server(callID: "c1", .mediaToken)))
        #expect(ledger.entries["c1"]?.stage == .connecting)
        // A token that came anyway (it was never asked for) joins nothing a second time.
        #expect(
            ledger.serverAnswered(
                "c1", .mediaToken,
                .mediaToken(MediaToken(url: "wss://media.test", token: "late", expiresAt: Self.stamp))
            ).isEmpty)
        #expect(ledger.mediaJoined("c1", succeeded: true).contains(.notify(.connected(callID: "c1"))))
    }

    @Test func aJoinAnsweredWithoutATokenAsksForOne() {
        var ledger = CallLedger(userID: "me")
        let effects = ledger.callJoined(Self.groupCall, handle: "Team")
        #expect(effects.contains(.server(callID: "c1", .mediaToken)))
        #expect(!effects.contains { if case .joinMedia = $0 { true } else { false } })
    }

    // MARK: The coordinator

    /// The requests from the join on.
    static func requests(afterJoinOf rig: ScenarioRig) -> [String] {
        let requests = rig.backend.requests
        let last =
            requests.lastIndex { $0 == "preauthorized" || $0 == "preauthorizationRefused" } ?? requests.lastIndex(
                of: "join") ?? 0
        return Array(requests[last...])
    }

    @Test func aValidPreauthorizationConnectsWithoutAMediaTokenRequest() async throws {
        let rig = ScenarioRig(.ours)
        let call = try await GroupJoinTests.declinedGroupCall(rig)
        rig.backend.allowPreauthorization("pa", forCall: call.id)
        let coordinator = try #require(rig.coordinator as? CallCoordinator)

        try await coordinator.joinCall(call.id, handle: "Team", preauthorization: "pa")
        await rig.run(seconds: 1)
        let requests = Self.requests(afterJoinOf: rig)
        #expect(requests.first == "preauthorized")
        #expect(!requests.contains("mediaToken"), "\(requests)")
        #expect(rig.media.session(call.id)?.status.token == "joined-\(call.id)")
        #expect(coordinator.call(call.id)?.stage == .active)
        #expect(rig.system.call(rig.uuid(call))?.state == .connected)
        #expect(rig.media.session(call.id)?.status.audioFlowing == true)
        #expect(rig.system.violations.isEmpty)
    }

    @Test(arguments: ["used-or-expired", "for-another-call"])
    func anInvalidPreauthorizationJoinsTheUsualWay(token: String) async throws {
        let rig = ScenarioRig(.ours)
        let call = try await GroupJoinTests.declinedGroupCall(rig)
        rig.backend.allowPreauthorization("for-another-call", forCall: "another")
        let coordinator = try #require(rig.coordinator as? CallCoordinator)

        try await coordinator.joinCall(call.id, handle: "Team", preauthorization: token)
        await rig.run(seconds: 1)
        let requests = Self.requests(afterJoinOf: rig)
        #expect(requests.first == "preauthorizationRefused")
        #expect(requests.contains("mediaToken"), "\(requests)")
        #expect(rig.media.session(call.id)?.status.token == "token-\(call.id)")
        #expect(coordinator.call(call.id)?.stage == .active)
        #expect(rig.media.session(call.id)?.status.audioFlowing == true)
        #expect(rig.system.violations.isEmpty)
    }

    /// The preloader's pre-authorisation for the meeting this call started goes with the join,
    /// once; one it let expire is not sent at all.
    @Test(arguments: [false, true])
    func theJoinUsesThePreloadersPreauthorizationOnce(expired: Bool) async throws {
        let rig = ScenarioRig(.ours)
        let call = try await GroupJoinTests.declinedGroupCall(rig)
        let meetings = SimulatedMeetingServer(clock: rig.clock)
        meetings.schedule("m", startsIn: 60, group: call.scopeId)
        let preloader = MeetingPreloader(backend: meetings, clock: rig.clock)
        await preloader.refresh()
        meetings.start("m", callID: call.id)
        await preloader.refresh()
        let issued = try #require(meetings.issued.first)
        rig.backend.allowPreauthorization(issued.token, forCall: call.id)
        let coordinator = CallCoordinator(
            userID: rig.backend.me, backend: rig.backend, callSystem: rig.system,
            media: { [media = rig.media] in media.makeSession($0) },
            clock: rig.clock, preauthorizations: preloader)
        if expired { rig.clock.advance(by: 600) }

        try await coordinator.joinCall(call.id, handle: "Team", groupID: call.scopeId)
        await rig.run(seconds: 1)
        let requests = Self.requests(afterJoinOf: rig)
        #expect(requests.contains("mediaToken") == expired, "\(requests)")
        #expect(requests.contains("preauthorized") == !expired)
        #expect(!requests.contains("preauthorizationRefused"), "an expired one is not sent")
        #expect(coordinator.call(call.id)?.stage == .active)
        #expect(await preloader.preauthorizations.isEmpty, "handed out once (or expired)")
    }
}

extension PreauthorizedJoinTests {
    /// A join that threw hands the meeting back: the preloader asks for a fresh one, which the
    /// next attempt sends.
    @Test func aFailedJoinLetsThePreloaderGetAFreshOne() async throws {
        let rig = ScenarioRig(.ours)
        let call = try await GroupJoinTests.declinedGroupCall(rig)
        let meetings = SimulatedMeetingServer(clock: rig.clock)
        meetings.schedule("m", startsIn: 60, group: call.scopeId)
        meetings.start("m", callID: call.id)
        let preloader = MeetingPreloader(backend: meetings, clock: rig.clock)
        await preloader.refresh()
        let coordinator = CallCoordinator(
            userID: rig.backend.me, backend: rig.backend, callSystem: rig.system,
            media: { [media = rig.media] in media.makeSession($0) },
            clock: rig.clock, preauthorizations: preloader)
        rig.backend.fail("join", status: 0, code: "TRANSPORT")
        await #expect(throws: SwitchboardAPIError.self) { try await coordinator.joinCall(call.id, handle: "Team") }
        #expect(coordinator.liveCallIDs.isEmpty, "nothing joined")

        await preloader.update()
        #expect(meetings.preauthorizationRequests == ["m", "m"])
        let fresh = try #require(meetings.issued.last)
        rig.backend.allowPreauthorization(fresh.token, forCall: call.id)
        try await coordinator.joinCall(call.id, handle: "Team")
        await rig.run(seconds: 1)
        #expect(Self.requests(afterJoinOf: rig).first == "preauthorized")
        #expect(!Self.requests(afterJoinOf: rig).contains("mediaToken"))
        #expect(coordinator.call(call.id)?.stage == .active)
    }
}
