import Foundation

/// Why a call ended, as the call system shows it. Raw values are CallKit's
/// `CXCallEndedReason`, so the Apple adapter maps them one to one.
public enum CallEndReason: Int, Sendable, Equatable, CaseIterable {
    case failed = 1
    case remoteEnded = 2
    case unanswered = 3
    case answeredElsewhere = 4
    case declinedElsewhere = 5
}

/// What the call system shows about a call (CallKit's `CXCallUpdate`).
public struct CallUpdate: Sendable, Equatable {
    /// A generic handle: the caller's user id, or the group's id for a group call.
    public var handle: String
    /// The name to show, when known.
    public var callerName: String?
    public var hasVideo: Bool
    public var isGroup: Bool

    public init(handle: String, callerName: String? = nil, hasVideo: Bool = false, isGroup: Bool = false) {
        self.handle = handle
        self.callerName = callerName
        self.hasVideo = hasVideo
        self.isGroup = isGroup
    }
}

/// Why `reportNewIncomingCall` refused a call. Raw values are CallKit's
/// `CXErrorCodeIncomingCallError.Code`.
public enum IncomingCallError: Int, Sendable, Equatable {
    case unknown = 0
    case unentitled = 1
    case callUUIDAlreadyExists = 2
    case filteredByDoNotDisturb = 3
    case filteredByBlockList = 4
    case filteredDuringRestrictedSharingMode = 5
    case callIsProtected = 6
    case filteredBySensitiveParticipants = 7
}

/// Why a requested transaction was refused. Raw values are CallKit's
/// `CXErrorCodeRequestTransactionError.Code`.
public enum TransactionError: Int, Sendable, Equatable {
    case unknown = 0
    case unentitled = 1
    case unknownCallProvider = 2
    case emptyTransaction = 3
    case unknownCallUUID = 4
    case callUUIDAlreadyExists = 5
    case invalidAction = 6
    case maximumCallGroupsReached = 7
    case callIsProtected = 8
}

/// An error the call system answered with.
public enum CallSystemError: Error, Sendable, Equatable {
    case incomingCall(IncomingCallError)
    case transaction(TransactionError)
    /// Any other error, described (a domain and code the SDK does not know).
    case other(String)
}

/// What a call action asks for (CallKit's `CXStartCallAction`, `CXAnswerCallAction`, …).
public enum CallActionKind: Sendable, Equatable {
    case start(handle: String, hasVideo: Bool)
    case answer
    case end
    case setMuted(Bool)
    case setHeld(Bool)
}

/// A transaction the SDK asks the call system for (one action).
public struct CallActionRequest: Sendable, Equatable {
    public var callUUID: UUID
    public var kind: CallActionKind

    public init(callUUID: UUID, kind: CallActionKind) {
        self.callUUID = callUUID
        self.kind = kind
    }
}

/// An action the call system asks the app to perform. Complete it exactly once with
/// `fulfill()` or `fail()`; the call system may time it out first.
public final class CallSystemAction: Sendable, CustomStringConvertible {
    public enum Completion: Sendable, Equatable { case fulfilled, failed }

    public let callUUID: UUID
    public let kind: CallActionKind
    /// Unique per action, for matching `timedOutPerforming` with a pending action.
    public let id: UUID
    private let complete: @Sendable (Completion) -> Void

    /// - Parameter complete: receives every `fulfill()` and `fail()` (the call system judges
    ///   repeats; the adapter passes them to `CXAction`).
    public init(
        callUUID: UUID, kind: CallActionKind, id: UUID = UUID(), complete: @escaping @Sendable (Completion) -> Void
    ) {
        self.callUUID = callUUID
        self.kind = kind
        self.id = id
        self.complete = complete
    }

    public func fulfill() { complete(.fulfilled) }
    public func fail() { complete(.failed) }

    public var description: String { "\(kind) \(callUUID)" }
}

/// What the SDK needs from the phone's call system (CallKit on iOS): shaped so that an
/// adapter over `CXProvider` and `CXCallController` is a thin mapping, and so that a
/// simulated call system can enforce the same contract in tests.
public protocol CallSystem: AnyObject, Sendable {
    /// The one delegate; held weakly, like `CXProvider`'s.
    func setDelegate(_ delegate: any CallSystemDelegate)
    /// `reportNewIncomingCall(with:update:completion:)`. A refusal means no call exists.
    func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (CallSystemError?) -> Void)
    /// `reportCall(with:updated:)`.
    func reportCallUpdated(uuid: UUID, update: CallUpdate)
    /// `reportOutgoingCall(with:startedConnectingAt:)`.
    func reportOutgoingCallStartedConnecting(uuid: UUID, at date: Date?)
    /// `reportOutgoingCall(with:connectedAt:)`.
    func reportOutgoingCallConnected(uuid: UUID, at date: Date?)
    /// `reportCall(with:endedAt:reason:)`.
    func reportCallEnded(uuid: UUID, at date: Date?, reason: CallEndReason)
    /// `CXCallController.requestTransaction(with:completion:)` for one action.
    func requestTransaction(_ request: CallActionRequest, completion: @escaping @Sendable (CallSystemError?) -> Void)
}

/// The call system's callbacks (CallKit's `CXProviderDelegate`).
public protocol CallSystemDelegate: AnyObject, Sendable {
    /// `providerDidReset`: every call is gone; stop audio and tear everything down.
    func callSystemDidReset()
    /// `provider(_:perform:)` for any call action.
    func callSystem(perform action: CallSystemAction)
    /// `provider(_:timedOutPerforming:)`.
    func callSystem(timedOutPerforming action: CallSystemAction)
    /// `provider(_:didActivate:)`: the only moment audio may start.
    func callSystemDidActivateAudioSession()
    /// `provider(_:didDeactivate:)`.
    func callSystemDidDeactivateAudioSession()
}
