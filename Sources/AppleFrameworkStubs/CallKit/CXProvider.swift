import Foundation

/// The provider's callbacks. Only `providerDidReset(_:)` is required, as in CallKit; the optional
/// methods have empty defaults below because Linux has no `@objc optional`.
public protocol CXProviderDelegate: NSObjectProtocol {
    func providerDidReset(_ provider: CXProvider)
    func providerDidBegin(_ provider: CXProvider)
    func provider(_ provider: CXProvider, execute transaction: CXTransaction) -> Bool
    func provider(_ provider: CXProvider, perform action: CXStartCallAction)
    func provider(_ provider: CXProvider, perform action: CXAnswerCallAction)
    func provider(_ provider: CXProvider, perform action: CXEndCallAction)
    func provider(_ provider: CXProvider, perform action: CXSetHeldCallAction)
    func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction)
    func provider(_ provider: CXProvider, perform action: CXSetGroupCallAction)
    func provider(_ provider: CXProvider, perform action: CXPlayDTMFCallAction)
    func provider(_ provider: CXProvider, timedOutPerforming action: CXAction)
    func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession)
    func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession)
}

extension CXProviderDelegate {
    public func providerDidBegin(_ provider: CXProvider) {}
    /// `false`: the provider performs the transaction's actions one by one.
    public func provider(_ provider: CXProvider, execute transaction: CXTransaction) -> Bool { false }
    public func provider(_ provider: CXProvider, perform action: CXStartCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXAnswerCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXEndCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXSetHeldCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXSetGroupCallAction) {}
    public func provider(_ provider: CXProvider, perform action: CXPlayDTMFCallAction) {}
    public func provider(_ provider: CXProvider, timedOutPerforming action: CXAction) {}
    public func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession) {}
    public func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession) {}
}

/// Reports calls to the system and receives the user's actions through its delegate. An app
/// creates exactly one. The stub records every report; incoming-call reports keep their
/// completion until a test calls `_stubCompleteIncomingCallReport(_:error:)`.
open class CXProvider: NSObject {
    /// A `reportNewIncomingCall` (stub only).
    public struct _StubIncomingCallReport {
        public let uuid: UUID
        public let update: CXCallUpdate
        let completion: @Sendable ((any Error)?) -> Void
    }

    /// A `reportCall(with:endedAt:reason:)` (stub only).
    public struct _StubEndedCallReport: Sendable, Hashable {
        public let uuid: UUID
        public let dateEnded: Date?
        public let reason: CXCallEndedReason

        public init(uuid: UUID, dateEnded: Date?, reason: CXCallEndedReason) {
            self.uuid = uuid
            self.dateEnded = dateEnded
            self.reason = reason
        }
    }

    /// Any other report (stub only).
    public enum _StubReport {
        case updated(UUID, CXCallUpdate)
        case outgoingStartedConnecting(UUID, Date?)
        case outgoingConnected(UUID, Date?)
    }

    private struct Records {
        weak var delegate: (any CXProviderDelegate)?
        var delegateQueue: DispatchQueue?
        var configuration: CXProviderConfiguration
        var incoming: [_StubIncomingCallReport] = []
        var completedIncoming: Set<Int> = []
        var ended: [_StubEndedCallReport] = []
        var other: [_StubReport] = []
        var invalidated = false
    }

    private let records: StubRecords<Records>

    public init(configuration: CXProviderConfiguration) {
        records = StubRecords(Records(configuration: configuration.copy() as! CXProviderConfiguration))
        super.init()
    }

    /// A copy of the provider's configuration.
    open var configuration: CXProviderConfiguration {
        get { records.withLock { $0.configuration.copy() as! CXProviderConfiguration } }
        set { records.withLock { $0.configuration = newValue.copy() as! CXProviderConfiguration } }
    }

    /// The delegate is held weakly; a `nil` queue means the main queue.
    open func setDelegate(_ delegate: (any CXProviderDelegate)?, queue: DispatchQueue?) {
        records.withLock {
            $0.delegate = delegate
            $0.delegateQueue = queue
        }
    }

    /// The completion runs on the delegate queue in CallKit (the stub runs it on the caller of
    /// `_stubCompleteIncomingCallReport`); a non-`nil` error means no call exists.
    open func reportNewIncomingCall(
        with UUID: UUID, update: CXCallUpdate, completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        records.withLock {
            $0.incoming.append(_StubIncomingCallReport(uuid: UUID, update: update, completion: completion))
        }
    }

    open func reportCall(with UUID: UUID, updated update: CXCallUpdate) {
        records.withLock { $0.other.append(.updated(UUID, update)) }
    }

    /// A `nil` date means now.
    open func reportCall(with UUID: UUID, endedAt dateEnded: Date?, reason endedReason: CXCallEndedReason) {
        records.withLock {
            $0.ended.append(_StubEndedCallReport(uuid: UUID, dateEnded: dateEnded, reason: endedReason))
        }
    }

    open func reportOutgoingCall(with UUID: UUID, startedConnectingAt dateStartedConnecting: Date?) {
        records.withLock { $0.other.append(.outgoingStartedConnecting(UUID, dateStartedConnecting)) }
    }

    open func reportOutgoingCall(with UUID: UUID, connectedAt dateConnected: Date?) {
        records.withLock { $0.other.append(.outgoingConnected(UUID, dateConnected)) }
    }

    /// Ends every call and stops the provider.
    open func invalidate() {
        records.withLock { $0.invalidated = true }
    }

    // MARK: Stub only

    /// The delegate, to call its methods as CallKit would (stub only).
    public var _stubDelegate: (any CXProviderDelegate)? { records.withLock { $0.delegate } }
    /// The queue passed to `setDelegate(_:queue:)` (stub only).
    public var _stubDelegateQueue: DispatchQueue? { records.withLock { $0.delegateQueue } }
    /// Every `reportNewIncomingCall`, in order (stub only).
    public var _stubIncomingCallReports: [_StubIncomingCallReport] { records.withLock { $0.incoming } }
    /// Every `reportCall(with:endedAt:reason:)`, in order (stub only).
    public var _stubEndedCallReports: [_StubEndedCallReport] { records.withLock { $0.ended } }
    /// Every other report, in order (stub only).
    public var _stubOtherReports: [_StubReport] { records.withLock { $0.other } }
    /// Whether `invalidate()` was called (stub only).
    public var _stubIsInvalidated: Bool { records.withLock { $0.invalidated } }

    /// Answers the incoming-call report at `index` (in `_stubIncomingCallReports`) as the system
    /// would: `nil` when the call is shown, else an `NSError` of
    /// `CXErrorCodeIncomingCallError.errorDomain` (stub only). A report is answered at most once.
    public func _stubCompleteIncomingCallReport(_ index: Int, error: (any Error)?) {
        let report = records.withLock { records -> _StubIncomingCallReport in
            precondition(records.completedIncoming.insert(index).inserted, "report \(index) was already completed")
            return records.incoming[index]
        }
        report.completion(error)
    }
}
