import Foundation

/// Asks the system to perform call actions. The stub records every requested transaction and
/// keeps its completion until a test calls `_stubCompleteRequest(_:error:)`.
open class CXCallController: NSObject {
    /// A transaction the app requested (stub only).
    public struct _StubRequest {
        public let transaction: CXTransaction
        let completion: @Sendable ((any Error)?) -> Void
    }

    private let queue: DispatchQueue
    private let requests = StubRecords<[_StubRequest]>([])
    private let completed = StubRecords<Set<Int>>([])

    /// Completions run on `queue` in CallKit (the stub runs them on the caller of
    /// `_stubCompleteRequest`).
    public init(queue: DispatchQueue) {
        self.queue = queue
        super.init()
    }

    /// Completions run on a private serial queue.
    public convenience override init() {
        self.init(queue: DispatchQueue(label: "AppleFrameworkStubs.CXCallController"))
    }

    open func request(_ transaction: CXTransaction, completion: @escaping @Sendable ((any Error)?) -> Void) {
        requests.withLock { $0.append(_StubRequest(transaction: transaction, completion: completion)) }
    }

    /// Every transaction requested so far, in order (stub only).
    public var _stubRequests: [_StubRequest] { requests.current }

    /// Answers the request at `index` (in `_stubRequests`) as the system would: `nil` when it
    /// was accepted, else an `NSError` of `CXErrorCodeRequestTransactionError.errorDomain`
    /// (stub only). A request is answered at most once.
    public func _stubCompleteRequest(_ index: Int, error: (any Error)?) {
        let request = requests.withLock { $0[index] }
        let first = completed.withLock { $0.insert(index).inserted }
        precondition(first, "request \(index) was already completed")
        request.completion(error)
    }
}
