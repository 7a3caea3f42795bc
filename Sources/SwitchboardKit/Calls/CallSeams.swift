import Foundation
import SwitchboardWire

/// The server requests the coordinator makes. `SwitchboardClient` is the real one; tests use
/// an in-memory backend.
public protocol CallBackend: Sendable {
    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo
    func call(_ callID: String) async throws -> CallInfo
    /// The user's ringing and active calls (`GET /calls/active`): how a push that could not be
    /// decrypted learns its call.
    func activeCalls() async throws -> [CallInfo]
    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo
    func mediaToken(forCall callID: String) async throws -> MediaToken
    /// The media token of our outgoing call while it rings, answered once the callee answers
    /// (`?wait=`): learning of the answer and getting the token take one leg. The default asks
    /// at once (`mediaToken(forCall:)`), so a backend without it keeps working.
    func mediaToken(forCall callID: String, waitingUpTo seconds: Int) async throws -> MediaToken
    /// Accepts and, with `withMediaToken`, asks for the media token in the same answer
    /// (`{"mediaToken": true}`, one round trip less). The default accepts without one, so a
    /// backend written before this existed keeps working: the coordinator then asks for the
    /// token separately.
    func accept(_ callID: String, withMediaToken: Bool) async throws -> CallWithMedia
    /// Joins an active group call with a meeting's pre-authorisation (`{"preauthorization": …}`):
    /// the answer carries the media token when the server accepted it. The default joins
    /// without it (`perform(.join, …)`, no token), so a backend written before this existed
    /// keeps working: the coordinator then asks for the token separately.
    func join(_ callID: String, preauthorization: String) async throws -> CallWithMedia
    /// The newest event id (where following the event stream starts).
    func eventCursor() async throws -> Int64
    func events(after: Int64, wait: Int) async throws -> EventsPage
    /// The long poll of the coordinator's watcher while calls are live; the default is
    /// `events(after:wait:)`.
    func callEvents(after: Int64, wait: Int) async throws -> EventsPage
    /// Opens connections ahead of need (a push woke the app and requests will follow). The
    /// default does nothing.
    func warmUp()
    /// Where this backend's round trips and losses are recorded (an adaptive answer deadline
    /// is computed from them); the default has none.
    var networkQualityMonitor: NetworkQualityMonitor? { get }
}

extension CallBackend {
    public func warmUp() {}

    public var networkQualityMonitor: NetworkQualityMonitor? { nil }

    /// A backend written before this existed cannot say: a push it could not decrypt then
    /// rings as an unknown caller until the event stream names the call, or ends as failed.
    public func activeCalls() async throws -> [CallInfo] {
        throw SwitchboardAPIError(
            status: 501, code: .notImplemented, message: "this backend cannot list the active calls")
    }

    public func mediaToken(forCall callID: String, waitingUpTo seconds: Int) async throws -> MediaToken {
        try await mediaToken(forCall: callID)
    }

    public func callEvents(after: Int64, wait: Int) async throws -> EventsPage {
        try await events(after: after, wait: wait)
    }

    public func accept(_ callID: String, withMediaToken: Bool) async throws -> CallWithMedia {
        CallWithMedia(call: try await perform(.accept, onCall: callID), media: nil)
    }

    public func join(_ callID: String, preauthorization: String) async throws -> CallWithMedia {
        CallWithMedia(call: try await perform(.join, onCall: callID), media: nil)
    }
}

extension SwitchboardClient: CallBackend {
    public func eventCursor() async throws -> Int64 { try await me().eventCursor }

    public var networkQualityMonitor: NetworkQualityMonitor? { networkQuality }
}

/// The media connection of one call (a LiveKit room, in production): the seam between the
/// coordinator and the media stack.
public protocol MediaSession: AnyObject, Sendable {
    /// Connects to the room; when it returns, the audio engine exists (but must not run yet).
    func join(url: String, token: String) async throws
    /// Starts audio I/O: called only once the call system activated the audio session.
    func startAudio()
    /// Stops audio I/O (deactivation, reset, end).
    func stopAudio()
    func setMuted(_ muted: Bool)
    /// Leaves the room; idempotent.
    func leave()
    /// Keeps to a memory-pressure plan (lower video resolution and bitrate, or none; drop
    /// buffers it can rebuild). The default does nothing (an audio-only session).
    func shed(_ plan: MemoryShedPlan)
}

extension MediaSession {
    public func shed(_ plan: MemoryShedPlan) {}
}

/// Time for the coordinator's deadlines, injected so tests run on a manual clock.
public protocol CallClock: Sendable {
    var now: Date { get }
    /// Runs `work` after `delay` (on any thread).
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void)
    /// Waits `duration` (the event watcher's pause after a failure).
    func sleep(for duration: Duration) async throws
}

extension Duration {
    /// The duration in (fractional) seconds, for clocks that keep time as a `Double`.
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

/// Wall-clock time and Dispatch timers.
public struct SystemCallClock: CallClock {
    public init() {}
    public var now: Date { Date() }
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + max(delay.inSeconds, 0), execute: work)
    }
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: max(duration, .zero))
    }
}
