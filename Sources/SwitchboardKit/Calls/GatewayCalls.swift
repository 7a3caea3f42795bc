import Foundation
import SwitchboardWire

extension ScopeKind {
    /// A call an app server rang through the push gateway (`POST /gateway/v1/signals`): its
    /// pushes name this scope, and it is answered over the app server's own signaling.
    public static var gateway: ScopeKind { .unknown("gateway") }
}

/// A call an app server rang through the push gateway, as its VoIP push named it.
public struct GatewayCall: Sendable, Equatable {
    /// The app server's own call id (the signal's `callId`).
    public var callID: String
    /// The signal's `roomId`.
    public var roomID: String
    public var mode: CallMode
    public var callerName: String?
    /// The signal's `ext.data`: the app server's own strings for its app.
    public var ext: [String: String]

    public init(callID: String, roomID: String, mode: CallMode, callerName: String? = nil, ext: [String: String] = [:])
    {
        self.callID = callID
        self.roomID = roomID
        self.mode = mode
        self.callerName = callerName
        self.ext = ext
    }
}

/// Where a gateway call stands for this phone's user, as the app server knows it.
public enum GatewayCallState: Sendable, Equatable {
    /// It still rings.
    case ringing
    /// The user answered it, on this device or another one (the coordinator knows which).
    case answered
    /// The user declined it, here or on another device.
    case declined
    /// It rang out unanswered.
    case missed
    /// The caller withdrew it before it was answered (the app server cancelled the signal).
    case cancelled
    /// It was answered and is over (someone hung up).
    case ended
    /// It failed on the app server's side.
    case failed
}

/// An app server's own call signaling, for the calls it rings through the push gateway
/// (docs/gateway.md): the coordinator answers, declines and hangs up these calls here, not
/// over Switchboard's call API, and keeps every rule it keeps for its own calls (reported
/// before the push handler returns, one screen per call, ended locally and on the app server on
/// every failure path, the answer deadline).
///
/// Each method returns the call's state after the action. Throw a ``SwitchboardAPIError`` with
/// the HTTP status the app server answered (a 409 when the call moved on, say); any other
/// error counts as no answer (status 0), which is retried where Switchboard's calls are.
/// When the app's own signaling learns that a call changed (cancelled, answered elsewhere, hung
/// up), tell the coordinator with ``CallCoordinator/gatewayCallChanged(_:to:)``; it also
/// re-reads each live gateway call every ``CallCoordinator/gatewayRecheckSeconds``.
public protocol GatewayCallBackend: Sendable {
    /// The call's state now.
    func state(of call: GatewayCall) async throws -> GatewayCallState
    /// The user answered on this device.
    func answer(_ call: GatewayCall) async throws -> GatewayCallState
    /// The user declined on this device.
    func decline(_ call: GatewayCall) async throws -> GatewayCallState
    /// The user hung up on this device (or the coordinator ended a failed call).
    func hangUp(_ call: GatewayCall) async throws -> GatewayCallState
    /// The media token for the call's room, once it was answered here.
    func mediaToken(for call: GatewayCall) async throws -> MediaToken
}

/// The Switchboard side of a coordinator whose user has no Switchboard account, only calls rung
/// through the push gateway: every request is refused (404), so nothing is ever sent.
public struct GatewayOnlyBackend: CallBackend {
    public init() {}

    private func refuse() -> SwitchboardAPIError {
        SwitchboardAPIError(status: 404, code: .notFound, message: "no Switchboard account: gateway calls only")
    }

    public func createCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID
    ) async throws
        -> CallInfo
    { throw refuse() }
    public func call(_ callID: String) async throws -> CallInfo { throw refuse() }
    public func activeCalls() async throws -> [CallInfo] { [] }
    public func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo { throw refuse() }
    public func mediaToken(forCall callID: String) async throws -> MediaToken { throw refuse() }
    public func eventCursor() async throws -> Int64 { throw refuse() }
    public func events(after: Int64, wait: Int) async throws -> EventsPage { throw refuse() }
}

extension GatewayCall {
    /// The call as the ledger reads Switchboard's: one invitation (this user's) whose state
    /// carries what happened, so every rule that reads a server answer reads this one alike.
    func info(_ state: GatewayCallState, for userID: String) -> CallInfo {
        let (call, invitation, reason): (CallState, InvitationState, CallInfo.EndReason?) =
            switch state {
            case .ringing: (.ringing, .ringing, nil)
            case .answered: (.active, .accepted, nil)
            case .declined: (.ended, .declined, .declined)
            case .missed: (.ended, .missed, .missed)
            case .cancelled: (.ended, .cancelled, .cancelled)
            case .ended: (.ended, .accepted, .completed)
            case .failed: (.ended, .ringing, .connectionLost)
            }
        let stamp = "1970-01-01T00:00:00.000Z"
        return CallInfo(
            id: callID, scopeKind: .gateway, scopeId: roomID, mode: mode, state: call, endReason: reason,
            createdBy: "", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: userID, state: invitation, updatedAt: stamp)], participants: [])
    }
}
