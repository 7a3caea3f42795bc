import Foundation
import SwitchboardKit

/// What a simulated phone keeps across launches of the app: how often the app was killed for
/// mishandling VoIP pushes (iOS stops delivering them after repeated offences) and which
/// launch owns the call provider.
public final class SimulatedDevice: Sendable {
    struct State {
        var offences = 0
        var launch = 0
        var providerLaunch: Int?
    }

    let state = LockedState(State())
    /// Offences after which pushes are no longer delivered.
    public let offencesBeforePushesStop: Int

    public init(offencesBeforePushesStop: Int = 3) {
        self.offencesBeforePushesStop = offencesBeforePushesStop
    }

    /// A new process of the app starts (it may create one provider).
    public func launch() {
        state.withLock {
            $0.launch += 1
            $0.providerLaunch = nil
        }
    }

    /// Times the app was killed for a push it did not report in time.
    public var offences: Int { state.withLock { $0.offences } }

    /// True once iOS stopped delivering VoIP pushes to the app.
    public var pushesStopped: Bool { offences >= offencesBeforePushesStop }
}

/// A broken rule of the call system's contract. Real iOS answers most of these by killing the
/// app, showing stale UI or staying silent; the simulation records them so a test fails.
public enum CallSystemViolation: Sendable, Equatable, CustomStringConvertible {
    /// The push handler's completion ran before the push was reported: the app is killed.
    case pushCompletedBeforeReport(push: Int)
    /// The push handler returned without reporting the push synchronously.
    case pushNotReportedSynchronously(push: Int)
    /// A second provider in one process (transactions get lost).
    case secondProvider
    /// An action completed twice.
    case actionCompletedTwice(CallActionKind, UUID)
    /// An action completed after the call system had timed it out.
    case actionCompletedAfterTimeout(CallActionKind, UUID)
    /// An end action was failed (it leaves stale system UI; fulfil it even for unknown calls).
    case endActionFailed(UUID)
    /// The app activated the audio session itself (CallKit owns it).
    case audioSessionActivatedByApp
    /// An ending reported for a call that had already ended.
    case endedTwice(UUID)
    /// An ending or outgoing report for a call the call system never had.
    case unknownCall(UUID)

    public var description: String {
        switch self {
        case .pushCompletedBeforeReport(let push):
            "push \(push): completion ran before the call was reported (app killed)"
        case .pushNotReportedSynchronously(let push):
            "push \(push): handler returned without reporting a call (app killed)"
        case .secondProvider: "a second provider was created in one process"
        case .actionCompletedTwice(let kind, let uuid): "\(kind) action for \(uuid) completed twice"
        case .actionCompletedAfterTimeout(let kind, let uuid): "\(kind) action for \(uuid) completed after it timed out"
        case .endActionFailed(let uuid): "end action for \(uuid) was failed, not fulfilled"
        case .audioSessionActivatedByApp: "the app activated the audio session itself"
        case .endedTwice(let uuid): "call \(uuid) was reported ended twice"
        case .unknownCall(let uuid): "report for unknown call \(uuid)"
        }
    }
}
