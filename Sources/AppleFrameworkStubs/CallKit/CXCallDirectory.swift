import Foundation

/// E.164 digits as one integer (`CXCallDirectoryPhoneNumber`, `int64_t`).
public typealias CXCallDirectoryPhoneNumber = Int64

/// Foundation's `NSExtensionContext`, which Linux lacks: the slice a Call Directory extension uses.
open class NSExtensionContext: NSObject {
    /// What `cancelRequest(withError:)` was given, if it was called.
    public var _stubCancelledWith: (any Error)? { cancelled.current }
    private let cancelled = StubRecords<(any Error)?>(nil)

    open func cancelRequest(withError error: any Error) {
        cancelled.withLock { $0 = error }
    }
}

/// The delegate a Call Directory request reports its failure to.
public protocol CXCallDirectoryExtensionContextDelegate: NSObjectProtocol {
    func requestFailed(for extensionContext: CXCallDirectoryExtensionContext, withError error: any Error)
}

/// One Call Directory request. The stub records every call in order; a test decides with
/// `_stubCompleteRequest(expired:)` how the system answers `completeRequest`.
open class CXCallDirectoryExtensionContext: NSExtensionContext {
    /// A call the extension made, in order.
    public enum _StubOperation: Equatable, Sendable {
        case addBlocking(Int64)
        case addIdentification(Int64, String)
        case removeBlocking(Int64)
        case removeIdentification(Int64)
        case removeAllBlocking
        case removeAllIdentification
        case complete
    }

    open weak var delegate: (any CXCallDirectoryExtensionContextDelegate)?
    open private(set) var isIncremental: Bool

    private let operations = StubRecords<[_StubOperation]>([])
    private let completion = StubRecords<(@Sendable (Bool) -> Void)?>(nil)

    /// A request as the system starts one; `isIncremental` is what it will say.
    public init(_stubIncremental isIncremental: Bool) {
        self.isIncremental = isIncremental
    }

    public var _stubOperations: [_StubOperation] { operations.current }

    open func addBlockingEntry(withNextSequentialPhoneNumber phoneNumber: CXCallDirectoryPhoneNumber) {
        operations.withLock { $0.append(.addBlocking(phoneNumber)) }
    }

    open func removeBlockingEntry(withPhoneNumber phoneNumber: CXCallDirectoryPhoneNumber) {
        operations.withLock { $0.append(.removeBlocking(phoneNumber)) }
    }

    open func removeAllBlockingEntries() {
        operations.withLock { $0.append(.removeAllBlocking) }
    }

    open func addIdentificationEntry(
        withNextSequentialPhoneNumber phoneNumber: CXCallDirectoryPhoneNumber, label: String
    ) {
        operations.withLock { $0.append(.addIdentification(phoneNumber, label)) }
    }

    open func removeIdentificationEntry(withPhoneNumber phoneNumber: CXCallDirectoryPhoneNumber) {
        operations.withLock { $0.append(.removeIdentification(phoneNumber)) }
    }

    open func removeAllIdentificationEntries() {
        operations.withLock { $0.append(.removeAllIdentification) }
    }

    open func completeRequest(completionHandler completion: (@Sendable (Bool) -> Void)? = nil) {
        operations.withLock { $0.append(.complete) }
        self.completion.withLock { $0 = completion }
    }

    /// The system's answer to `completeRequest`: `expired` true when the request ran too long.
    public func _stubCompleteRequest(expired: Bool) {
        completion.withLock { $0 }?(expired)
    }

    /// The system reports the request failed (entries out of order, duplicates …).
    public func _stubFail(_ error: any Error) {
        delegate?.requestFailed(for: self, withError: error)
    }
}

/// The principal class of a Call Directory extension: the system calls `beginRequest(with:)`.
open class CXCallDirectoryProvider: NSObject {
    open func beginRequest(with context: CXCallDirectoryExtensionContext) {}
}

/// The app's handle on its Call Directory extensions. The stub answers `reloadExtension` with
/// the errors a test queued (`_stubReset(reloadErrors:)`), then with success.
// @unchecked Sendable: its only stored state, `state`, is a `let` StubRecords that takes its
// lock for every read and write.
open class CXCallDirectoryManager: NSObject, @unchecked Sendable {
    public enum EnabledStatus: Int, Sendable {
        case unknown = 0
        case disabled = 1
        case enabled = 2
    }

    public static let sharedInstance = CXCallDirectoryManager()

    private let state = StubRecords<(reloads: [String], errors: [any Error], status: EnabledStatus)>(([], [], .enabled))

    /// Identifiers reloaded so far, in order.
    public var _stubReloads: [String] { state.current.reloads }

    /// The errors the next reloads answer, one each; the status `getEnabledStatus` answers.
    public func _stubReset(reloadErrors: [any Error] = [], status: EnabledStatus = .enabled) {
        state.withLock { $0 = ([], reloadErrors, status) }
    }

    open func reloadExtension(
        withIdentifier identifier: String, completionHandler completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        let error = state.withLock { state -> (any Error)? in
            state.reloads.append(identifier)
            return state.errors.isEmpty ? nil : state.errors.removeFirst()
        }
        completion?(error)
    }

    open func reloadExtension(withIdentifier identifier: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            reloadExtension(withIdentifier: identifier) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    open func getEnabledStatusForExtension(
        withIdentifier identifier: String,
        completionHandler completion: @escaping @Sendable (EnabledStatus, (any Error)?) -> Void
    ) {
        completion(state.current.status, nil)
    }

    open func enabledStatusForExtension(withIdentifier identifier: String) async throws -> EnabledStatus {
        state.current.status
    }
}

/// Why a Call Directory request or reload failed (`CXErrorCodeCallDirectoryManagerError`).
public struct CXErrorCodeCallDirectoryManagerError: CustomNSError, Hashable {
    /// Raw values are CallKit's.
    public enum Code: Int, Sendable, Hashable {
        case unknown = 0
        case noExtensionFound = 1
        case loadingInterrupted = 2
        case entriesOutOfOrder = 3
        case duplicateEntries = 4
        case maximumEntriesExceeded = 5
        case extensionDisabled = 6
        case currentlyLoading = 7
        case unexpectedIncrementalRemoval = 8
    }

    /// `CXErrorDomainCallDirectoryManager`.
    public static var errorDomain: String { "com.apple.CallKit.error.calldirectorymanager" }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var errorCode: Int { code.rawValue }
}
