import Foundation

/// A kind of push (`PKPushType`): a string-backed extensible enum, as Apple imports it.
public struct PKPushType: Hashable, RawRepresentable, Sendable {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// `PKPushTypeVoIP`.
    public static let voIP = PKPushType(rawValue: "PKPushTypeVoIP")
}

/// A push token for one push type.
open class PKPushCredentials: NSObject {
    open private(set) var type: PKPushType
    open private(set) var token: Data

    /// The system creates credentials; tests create them with this (stub only).
    public init(_stubType type: PKPushType, token: Data) {
        self.type = type
        self.token = token
        super.init()
    }
}

/// A received push.
open class PKPushPayload: NSObject {
    open private(set) var type: PKPushType
    open private(set) var dictionaryPayload: [AnyHashable: Any]

    /// The system creates payloads; tests create them with this (stub only).
    public init(_stubType type: PKPushType, dictionaryPayload: [AnyHashable: Any]) {
        self.type = type
        self.dictionaryPayload = dictionaryPayload
        super.init()
    }
}

/// What the system says about a VoIP push (iOS 26.4).
@available(iOS 26.4, *)
// @unchecked: the one stored property is an immutable Bool.
open class PKVoIPPushMetadata: NSObject, @unchecked Sendable {
    private let mustReportValue: Bool

    /// `false` when the push need not be reported to CallKit (already on a call, in the
    /// foreground, or the push is old).
    open var mustReport: Bool { mustReportValue }

    /// The system creates metadata; tests create it with this (stub only).
    public init(_stubMustReport mustReport: Bool) {
        mustReportValue = mustReport
        super.init()
    }
}

/// The registry's callbacks. Only the token update is required, as in PushKit; the optional
/// methods have defaults below because Linux has no `@objc optional`.
public protocol PKPushRegistryDelegate: NSObjectProtocol {
    func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType)
    func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType)
    func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping @Sendable () -> Void)
    @available(iOS 26.4, *)
    func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingVoIPPushWith payload: PKPushPayload, metadata: PKVoIPPushMetadata,
        withCompletionHandler completion: @escaping @Sendable () -> Void)
}

extension PKPushRegistryDelegate {
    public func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType) {}

    /// An app that leaves this out gets no pushes delivered; the stub just completes.
    public func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping @Sendable () -> Void
    ) {
        completion()
    }

    /// PushKit falls back to `pushRegistry(_:didReceiveIncomingPushWith:for:completion:)` when
    /// a delegate does not implement this.
    @available(iOS 26.4, *)
    public func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingVoIPPushWith payload: PKPushPayload, metadata: PKVoIPPushMetadata,
        withCompletionHandler completion: @escaping @Sendable () -> Void
    ) {
        pushRegistry(registry, didReceiveIncomingPushWith: payload, for: payload.type, completion: completion)
    }
}

/// Registers for pushes and delivers them to its delegate on its queue. The stub records the
/// order of `delegate` and `desiredPushTypes` assignments and serves tokens set by a test.
open class PKPushRegistry: NSObject {
    /// An assignment a test may check the order of (stub only).
    public enum _StubAssignment: Sendable, Hashable {
        case delegate(isNil: Bool)
        case desiredPushTypes(Set<PKPushType>?)
    }

    private struct Records {
        weak var delegate: (any PKPushRegistryDelegate)?
        var desiredPushTypes: Set<PKPushType>?
        var assignments: [_StubAssignment] = []
        var tokens: [PKPushType: Data] = [:]
    }

    private let queue: DispatchQueue?
    private let records = StubRecords(Records())

    /// Delegate callbacks run on `queue`; `nil` means the main queue.
    public init(queue: DispatchQueue?) {
        self.queue = queue
        super.init()
    }

    /// Held weakly (`weak var` in PushKit). Set it before `desiredPushTypes`, or pushes may
    /// arrive with no delegate.
    open var delegate: (any PKPushRegistryDelegate)? {
        get { records.withLock { $0.delegate } }
        set {
            records.withLock {
                $0.delegate = newValue
                $0.assignments.append(.delegate(isNil: newValue == nil))
            }
        }
    }

    open var desiredPushTypes: Set<PKPushType>? {
        get { records.withLock { $0.desiredPushTypes } }
        set {
            records.withLock {
                $0.desiredPushTypes = newValue
                $0.assignments.append(.desiredPushTypes(newValue))
            }
        }
    }

    /// The current token for `type`, if the system issued one.
    open func pushToken(for type: PKPushType) -> Data? { records.withLock { $0.tokens[type] } }

    // MARK: Stub only

    /// The queue passed to `init(queue:)` (stub only).
    public var _stubQueue: DispatchQueue? { queue }
    /// `delegate` and `desiredPushTypes` assignments, in order (stub only).
    public var _stubAssignments: [_StubAssignment] { records.withLock { $0.assignments } }
    /// Sets what `pushToken(for:)` returns (stub only); does not call the delegate.
    public func _stubSetPushToken(_ token: Data?, for type: PKPushType) { records.withLock { $0.tokens[type] = token } }
}
