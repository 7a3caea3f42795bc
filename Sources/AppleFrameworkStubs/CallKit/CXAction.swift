import Foundation

/// Something the system asks the provider to do, or the app asks the system for. Complete it
/// with `fulfill()` or `fail()`. The stub records every completion (`_stubCompletions`).
open class CXAction: NSObject {
    /// How a test sees a completion of this action (stub only).
    public enum _StubCompletion: Sendable, Hashable {
        case fulfilled
        case failed
    }

    private let identifier = UUID()
    private let completions = StubRecords<[_StubCompletion]>([])

    public override init() { super.init() }

    open var uuid: UUID { identifier }
    open var isComplete: Bool { !completions.current.isEmpty }

    open func fulfill() { completions.withLock { $0.append(.fulfilled) } }
    open func fail() { completions.withLock { $0.append(.failed) } }

    /// Every `fulfill()` and `fail()`, in order (stub only; CallKit honours only the first).
    public var _stubCompletions: [_StubCompletion] { completions.current }
}

/// An action on one call.
open class CXCallAction: CXAction {
    open private(set) var callUUID: UUID

    public init(call callUUID: UUID) {
        self.callUUID = callUUID
        super.init()
    }
}

/// Start an outgoing call.
open class CXStartCallAction: CXCallAction {
    open var handle: CXHandle
    open var isVideo = false

    public init(call callUUID: UUID, handle: CXHandle) {
        self.handle = handle
        super.init(call: callUUID)
    }
}

/// Answer an incoming call.
open class CXAnswerCallAction: CXCallAction {}

/// End (or decline) a call.
open class CXEndCallAction: CXCallAction {}

/// Put a call on hold or take it off hold.
open class CXSetHeldCallAction: CXCallAction {
    open var isOnHold: Bool

    public init(call callUUID: UUID, onHold: Bool) {
        isOnHold = onHold
        super.init(call: callUUID)
    }
}

/// Mute or unmute a call.
open class CXSetMutedCallAction: CXCallAction {
    open var isMuted: Bool

    public init(call callUUID: UUID, muted: Bool) {
        isMuted = muted
        super.init(call: callUUID)
    }
}

/// Merge a call into another's group (or take it out with `nil`).
open class CXSetGroupCallAction: CXCallAction {
    open var callUUIDToGroupWith: UUID?

    public init(call callUUID: UUID, callUUIDToGroupWith: UUID?) {
        self.callUUIDToGroupWith = callUUIDToGroupWith
        super.init(call: callUUID)
    }
}

/// Play touch tones.
open class CXPlayDTMFCallAction: CXCallAction {
    /// Raw values are CallKit's `CXPlayDTMFCallActionType`.
    public enum ActionType: Int, Sendable, Hashable {
        case singleTone = 1
        case softPause = 2
        case hardPause = 3
    }

    open var digits: String
    open var type: CXPlayDTMFCallAction.ActionType

    public init(call callUUID: UUID, digits: String, type: CXPlayDTMFCallAction.ActionType) {
        self.digits = digits
        self.type = type
        super.init(call: callUUID)
    }
}

/// Actions the app asks the system to perform together.
open class CXTransaction: NSObject {
    private let identifier = UUID()
    private let actionList: StubRecords<[CXAction]>

    public init(actions: [CXAction]) {
        actionList = StubRecords(actions)
        super.init()
    }

    public convenience init(action: CXAction) { self.init(actions: [action]) }

    open var uuid: UUID { identifier }
    open var actions: [CXAction] { actionList.current }
    open var isComplete: Bool { actions.allSatisfy(\.isComplete) }

    open func addAction(_ action: CXAction) { actionList.withLock { $0.append(action) } }
}
