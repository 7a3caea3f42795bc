import Foundation

/// Why `CXProvider.reportNewIncomingCall(with:update:completion:)` refused a call. Apple
/// imports it as a bridged `NSError` struct; CallKit hands the app an `NSError` of this domain.
public struct CXErrorCodeIncomingCallError: CustomNSError, Hashable {
    /// Raw values are CallKit's `CXErrorCodeIncomingCallError`.
    public enum Code: Int, Sendable, Hashable {
        case unknown = 0
        case unentitled = 1
        case callUUIDAlreadyExists = 2
        case filteredByDoNotDisturb = 3
        case filteredByBlockList = 4
        case filteredDuringRestrictedSharingMode = 5
        case callIsProtected = 6
        case filteredBySensitiveParticipants = 7
    }

    /// `CXErrorDomainIncomingCall`.
    public static var errorDomain: String { "com.apple.CallKit.error.incomingcall" }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var errorCode: Int { code.rawValue }
}

/// Why `CXCallController` refused a transaction; CallKit hands the app an `NSError` of this
/// domain.
public struct CXErrorCodeRequestTransactionError: CustomNSError, Hashable {
    /// Raw values are CallKit's `CXErrorCodeRequestTransactionError`.
    public enum Code: Int, Sendable, Hashable {
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

    /// `CXErrorDomainRequestTransaction`.
    public static var errorDomain: String { "com.apple.CallKit.error.requesttransaction" }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var errorCode: Int { code.rawValue }
}
