import Foundation

/// Why a call ended (`reportCall(with:endedAt:reason:)`); raw values are CallKit's.
public enum CXCallEndedReason: Int, Sendable, Hashable {
    case failed = 1
    case remoteEnded = 2
    case unanswered = 3
    case answeredElsewhere = 4
    case declinedElsewhere = 5
}

/// A way to reach the other party of a call.
open class CXHandle: NSObject {
    /// Raw values are CallKit's `CXHandleType`.
    public enum HandleType: Int, Sendable, Hashable {
        case generic = 1
        case phoneNumber = 2
        case emailAddress = 3
    }

    open private(set) var type: CXHandle.HandleType
    open private(set) var value: String

    public init(type: CXHandle.HandleType, value: String) {
        self.type = type
        self.value = value
        super.init()
    }
}

/// What the system shows about a call.
open class CXCallUpdate: NSObject {
    open var remoteHandle: CXHandle?
    open var localizedCallerName: String?
    open var supportsHolding = false
    open var supportsGrouping = false
    open var supportsUngrouping = false
    open var supportsDTMF = false
    open var hasVideo = false

    public override init() { super.init() }
}
