import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire
import SwitchboardTesting

/// The session token expires during a call (SPEC §4 rule 4: no stuck call screen). The app
/// refreshes it and hands the coordinator a new backend with `use(backend:)`, as docs/sdk.md
/// says; the coordinator must go on following its live calls with it, and re-read them.
@Suite("Coordinator: a token that expires during a call", .timeLimit(.minutes(2)))
struct SessionRenewalTests {
    @Test func aHangUpAfterTheRefreshReachesTheCallSystem() async throws {
        let rig = RenewalRig()
        let call = try await rig.connectedIncomingCall()
        rig.token.expire()
        #expect(
            await rig.token.eventually { $0.rejectedEventReads >= 1 }, "the coordinator's own event read got the 401")
        await rig.settle()

        rig.coordinator.use(backend: rig.refreshedToken())
        await rig.run(seconds: 1)
        rig.server.endCall(call.id, reason: .completed)
        await rig.run(seconds: 2)

        #expect(
            rig.system.call(rig.uuid(call))?.state == .ended, "\(String(describing: rig.system.call(rig.uuid(call))))")
        #expect(rig.system.call(rig.uuid(call))?.endReason == .remoteEnded)
        #expect(rig.coordinator.liveCallIDs.isEmpty)
        #expect(rig.media.session(call.id)?.status.left == true)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func aHangUpWhileNoTokenWorkedIsFoundByTheReReadAfterTheRefresh() async throws {
        let rig = RenewalRig()
        let call = try await rig.connectedIncomingCall()
        rig.token.expire()
        #expect(await rig.token.eventually { $0.rejectedEventReads >= 1 })
        await rig.settle()
        // The other side hangs up in the gap: its event is never read with a working token.
        rig.server.endCall(call.id, reason: .completed)
        await rig.run(seconds: 1)

        let fresh = rig.refreshedToken()
        rig.coordinator.use(backend: fresh)
        await rig.run(seconds: 2)

        #expect(rig.system.call(rig.uuid(call))?.state == .ended)
        #expect(rig.system.call(rig.uuid(call))?.endReason == .remoteEnded)
        #expect(rig.coordinator.liveCallIDs.isEmpty)
        #expect(fresh.requests.contains("fetch:\(call.id)"), "re-read with the new token: \(fresh.requests)")
    }

    @Test func theAppIsToldTheTokenWasRefusedOnce() async throws {
        let rig = RenewalRig()
        _ = try await rig.connectedIncomingCall()
        #expect(!rig.notices.all.contains(.tokenRejected))
        rig.token.expire()
        #expect(await rig.token.eventually { $0.rejectedEventReads >= 1 })
        await rig.run(seconds: 5)
        #expect(rig.notices.all.filter { $0 == .tokenRejected }.count == 1, "\(rig.notices.all)")
        #expect(rig.token.rejectedEventReads == 1, "a refused token is not tried again and again")
    }

    @Test func anEventReadSentWithTheOldTokenThatFailsAfterTheRefreshIsSentAgain() async throws {
        let rig = RenewalRig()
        let call = try await rig.connectedIncomingCall()
        // The read in flight answers only after the app already brought the new token.
        rig.token.holdEventReads(true)
        rig.token.expire()
        let fresh = rig.refreshedToken()
        rig.coordinator.use(backend: fresh)
        await rig.run(seconds: 0.5)
        rig.token.holdEventReads(false)
        #expect(await rig.token.eventually { $0.rejectedEventReads >= 1 })
        await rig.settle()
        #expect(await fresh.eventually { $0.eventReads >= 1 }, "the watcher goes on with the new token")

        rig.server.endCall(call.id, reason: .completed)
        await rig.run(seconds: 2)
        #expect(rig.system.call(rig.uuid(call))?.endReason == .remoteEnded)
        #expect(rig.coordinator.liveCallIDs.isEmpty)
        #expect(!rig.notices.all.contains(.tokenRejected), "the old token's 401 came too late to matter")
    }

    @Test func aHangUpTheServerRefusedForTheOldTokenIsSentWithTheNewOne() async throws {
        let rig = RenewalRig()
        let call = try await rig.connectedIncomingCall()
        rig.token.expire()
        try rig.system.userEnds(rig.uuid(call))
        await rig.run(seconds: 1)
        #expect(rig.system.call(rig.uuid(call))?.state == .ended, "the call screen goes away at once")
        #expect(rig.server.info(call.id)?.state == .active, "the server could not be told yet")

        rig.coordinator.use(backend: rig.refreshedToken())
        await rig.run(seconds: 2)
        #expect(rig.server.info(call.id)?.state == .ended, "the leave was sent again with the new token")
        #expect(rig.server.info(call.id)?.endReason == .completed)
    }

    @Test func aCursorTheServerForgotIsReplacedAndTheCallsReRead() async throws {
        let rig = RenewalRig()
        let call = try await rig.connectedIncomingCall()
        // The watcher's read stalls; meanwhile the call ends and the server prunes that far.
        rig.token.holdEventReads(true)
        let ended = rig.server.endCall(call.id, reason: .completed)
        rig.token.expireCursors(before: ended.id)
        rig.token.holdEventReads(false)
        await rig.run(seconds: 5)
        #expect(
            rig.system.call(rig.uuid(call))?.endReason == .remoteEnded,
            "410 CURSOR_EXPIRED: a new cursor, then a re-read")
        #expect(rig.coordinator.liveCallIDs.isEmpty)
    }

    /// A server that prunes past every new cursor at once: the watcher takes the next cursor
    /// only after a pause that grows, never in a tight loop.
    @Test func aCursorThatExpiresAgainAtOnceIsTakenAgainOnlyAfterAPause() async throws {
        let rig = RenewalRig()
        _ = try await rig.connectedIncomingCall()
        let cursors = { rig.token.requests.filter { $0 == "cursor" }.count }
        let start = cursors()
        rig.token.expireCursors(before: .max)
        // The first expiry takes a new cursor at once; that one expires too, and it waits.
        #expect(await eventually { cursors() == start + 1 && rig.clock.pendingTimers > 0 })
        try? await Task.sleep(for: .milliseconds(300))
        #expect(cursors() == start + 1, "no new cursor while it waits")
        // Pauses are 1 s, then 2 s, each spread ±25 %.
        rig.clock.advance(by: 1.25)
        #expect(await eventually { cursors() == start + 2 && rig.clock.pendingTimers > 0 })
        rig.clock.advance(by: 1.4)
        try? await Task.sleep(for: .milliseconds(100))
        #expect(cursors() == start + 2, "the next pause is at least 1.5 s")
        rig.clock.advance(by: 1.1)
        #expect(await eventually { cursors() == start + 3 })
    }
}

/// One session token over the shared in-memory server: every request with it fails 401 once
/// it expired. Event reads poll in memory and notice the expiry while they wait (a held poll
/// that ended and the next one refused).
final class TokenBackend: CallBackend {
    struct State {
        var expired = false
        var holdEventReads = false
        var oldestCursor: Int64 = 0
        var eventReads = 0
        var rejectedEventReads = 0
        var requests: [String] = []
    }

    let server: InMemoryCallBackend
    private let state = Mutex(State())

    init(server: InMemoryCallBackend) { self.server = server }

    func expire() { state.withLock { $0.expired = true } }
    /// While held, event reads wait (even past the expiry).
    func holdEventReads(_ hold: Bool) { state.withLock { $0.holdEventReads = hold } }
    /// Reads after an older cursor get 410 `CURSOR_EXPIRED`.
    func expireCursors(before id: Int64) { state.withLock { $0.oldestCursor = id } }
    var rejectedEventReads: Int { state.withLock { $0.rejectedEventReads } }
    var eventReads: Int { state.withLock { $0.eventReads } }
    var requests: [String] { state.withLock { $0.requests } }

    /// Waits (real time, bounded) until `condition` holds: the in-memory requests run on tasks.
    func eventually(_ condition: @escaping (State) -> Bool) async -> Bool {
        await SwitchboardTesting.eventually { state.withLock { condition($0) } }
    }

    private func check(_ request: String) throws {
        let expired = state.withLock { state in
            state.requests.append(request)
            return state.expired
        }
        if expired { throw SwitchboardAPIError(status: 401, code: .unauthorized, message: "session expired") }
    }

    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo {
        try check("create")
        return try await server.createCall(scopeKind: scopeKind, scopeID: scopeID, mode: mode, clientID: clientID)
    }

    func call(_ callID: String) async throws -> CallInfo {
        try check("fetch:\(callID)")
        return try await server.call(callID)
    }

    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo {
        try check("\(action.rawValue):\(callID)")
        return try await server.perform(action, onCall: callID)
    }

    func mediaToken(forCall callID: String) async throws -> MediaToken {
        try check("mediaToken:\(callID)")
        return try await server.mediaToken(forCall: callID)
    }

    func eventCursor() async throws -> Int64 {
        try check("cursor")
        return try await server.eventCursor()
    }

    func events(after: Int64, wait: Int) async throws -> EventsPage {
        state.withLock { $0.eventReads += 1 }
        while true {
            let (hold, expired, oldest) = state.withLock { ($0.holdEventReads, $0.expired, $0.oldestCursor) }
            if !hold {
                if expired {
                    state.withLock { $0.rejectedEventReads += 1 }
                    throw SwitchboardAPIError(status: 401, code: .unauthorized, message: "session expired")
                }
                if after < oldest { throw SwitchboardAPIError(status: 410, code: .cursorExpired, message: "") }
                if try await server.eventCursor() > after { return try await server.events(after: after, wait: wait) }
            }
            try await Task.sleep(nanoseconds: 2_000_000)
        }
    }
}

/// One phone: the coordinator over a token of the in-memory server, the simulated call system
/// and media, on a manual clock.
final class RenewalRig: Sendable {
    let clock = ManualClock()
    let server = InMemoryCallBackend()
    let token: TokenBackend
    let system: SimulatedCallSystem
    let media: SimulatedMedia
    let coordinator: CallCoordinator
    let notices = NoticeLog()

    init() {
        token = TokenBackend(server: server)
        system = SimulatedCallSystem(device: SimulatedDevice(), clock: clock)
        media = SimulatedMedia(clock: clock)
        media.attach(system)
        let media = self.media, notices = self.notices
        coordinator = CallCoordinator(
            userID: server.me, backend: token, callSystem: system, media: { media.makeSession($0) }, clock: clock,
            onNotice: { notices.append($0) })
    }

    deinit { coordinator.shutdown() }

    /// What the app does after refreshing the session: a new token over the same server.
    func refreshedToken() -> TokenBackend { TokenBackend(server: server) }

    func settle() async { await system.settle() }
    func run(seconds: Double) async { await clock.run(seconds: seconds, step: 0.1, settling: system) }
    func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }

    /// Alice calls; the push rings this phone; the user answers; media joins.
    func connectedIncomingCall() async throws -> CallInfo {
        let call = server.ring()
        system.deliverVoIPPush(server.push(for: call), to: coordinator)
        await run(seconds: 0.5)
        try system.userAnswers(uuid(call))
        await run(seconds: 3)
        try #require(system.call(uuid(call))?.state == .connected, "\(String(describing: system.call(uuid(call))))")
        try #require(server.info(call.id)?.state == .active)
        // The coordinator follows the call itself.
        try #require(await token.eventually { $0.eventReads >= 1 })
        return call
    }
}

/// `CallLedger.sessionRenewed` as a pure decision.
@Suite("CallLedger: a new session token", .timeLimit(.minutes(1)))
struct LedgerSessionRenewalTests {
    static let stamp = "2026-11-30T00:00:00.000Z"

    /// I call Bob; it rings.
    static func dialing() -> (CallLedger, CallInfo) {
        var ledger = CallLedger(userID: "me")
        let call = CallInfo(
            id: "call-out", scopeKind: .conversation, scopeId: "conv-bob", mode: .audio, state: .ringing,
            endReason: nil,
            createdBy: "me", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "bob", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: "me", joinedAt: stamp, leftAt: nil)])
        _ = ledger.callCreated(call, handle: "bob")
        return (ledger, call)
    }

    @Test func withoutLiveCallsThereIsNothingToFollow() {
        var ledger = CallLedger(userID: "me")
        #expect(ledger.sessionRenewed().isEmpty)
    }

    @Test func liveCallsAreFollowedAgainAndReRead() {
        var (ledger, call) = Self.dialing()
        #expect(ledger.sessionRenewed() == [.watch, .server(callID: call.id, .fetch)])
    }

    @Test func aWithdrawalRefusedWith401WaitsForTheNewTokenAndGoesOnce() {
        var (ledger, call) = Self.dialing()
        let uuid = CallIdentity.uuid(forCallID: call.id)
        _ = ledger.transactionCompleted(
            CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false)), error: nil)
        let ended = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: uuid, kind: .end))
        #expect(ended.contains(.server(callID: call.id, .cancel)))
        #expect(
            ledger.serverAnswered(call.id, .cancel, .failure(status: 401, code: .unauthorized)).isEmpty,
            "no retry with a refused token")
        #expect(
            ledger.sessionRenewed() == [.server(callID: call.id, .cancel)],
            "the call is over: only the cancel goes again")
        #expect(ledger.sessionRenewed().isEmpty, "once")
    }
}
