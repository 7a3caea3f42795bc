#if canImport(CallKit)
import CallKit
import PushKit
import AVFAudio
#else
import AppleFrameworkStubs
#endif
import Foundation
import SwitchboardKit

#if !os(macOS)  // CXProvider, VoIP pushes and AVAudioSession do not exist on macOS.

// One-to-one translations between the SDK's call-system vocabulary and CallKit's. Each switch
// names both sides so that a drift in either enum shows up here, not on a phone.

extension CXCallEndedReason {
    init(_ reason: CallEndReason) {
        switch reason {
        case .failed: self = .failed
        case .remoteEnded: self = .remoteEnded
        case .unanswered: self = .unanswered
        case .answeredElsewhere: self = .answeredElsewhere
        case .declinedElsewhere: self = .declinedElsewhere
        }
    }
}

extension CXCallUpdate {
    /// The update for `update`, with a generic handle. Grouping and DTMF are never offered.
    convenience init(_ update: CallUpdate, supportsHolding: Bool) {
        self.init()
        remoteHandle = CXHandle(type: .generic, value: update.handle)
        localizedCallerName = update.callerName
        hasVideo = update.hasVideo
        self.supportsHolding = supportsHolding
        supportsGrouping = false
        supportsUngrouping = false
        supportsDTMF = false
    }
}

/// The CallKit action that carries out `request`.
func callKitAction(for request: CallActionRequest) -> CXCallAction {
    switch request.kind {
    case .start(let handle, let hasVideo):
        let action = CXStartCallAction(call: request.callUUID, handle: CXHandle(type: .generic, value: handle))
        action.isVideo = hasVideo
        return action
    case .answer:
        return CXAnswerCallAction(call: request.callUUID)
    case .end:
        return CXEndCallAction(call: request.callUUID)
    case .setMuted(let muted):
        return CXSetMutedCallAction(call: request.callUUID, muted: muted)
    case .setHeld(let onHold):
        return CXSetHeldCallAction(call: request.callUUID, onHold: onHold)
    }
}

extension CallSystemError {
    /// Reads the `NSError` CallKit answered with by domain and code: the two CallKit domains
    /// map to their SDK enums, anything else (another domain, a code newer than this SDK) to
    /// `.other("<domain> <code>")`.
    init(callKitError error: any Error) {
        let error = error as NSError
        switch error.domain {
        case CXErrorCodeIncomingCallError.errorDomain:
            if let code = CXErrorCodeIncomingCallError.Code(rawValue: error.code), let mapped = IncomingCallError(code)
            {
                self = .incomingCall(mapped)
                return
            }
        case CXErrorCodeRequestTransactionError.errorDomain:
            if let code = CXErrorCodeRequestTransactionError.Code(rawValue: error.code),
                let mapped = TransactionError(code)
            {
                self = .transaction(mapped)
                return
            }
        default:
            break
        }
        self = .other("\(error.domain) \(error.code)")
    }
}

extension IncomingCallError {
    init?(_ code: CXErrorCodeIncomingCallError.Code) {
        switch code {
        case .unknown: self = .unknown
        case .unentitled: self = .unentitled
        case .callUUIDAlreadyExists: self = .callUUIDAlreadyExists
        case .filteredByDoNotDisturb: self = .filteredByDoNotDisturb
        case .filteredByBlockList: self = .filteredByBlockList
        case .filteredDuringRestrictedSharingMode: self = .filteredDuringRestrictedSharingMode
        case .callIsProtected: self = .callIsProtected
        case .filteredBySensitiveParticipants: self = .filteredBySensitiveParticipants
        @unknown default: return nil
        }
    }
}

extension TransactionError {
    init?(_ code: CXErrorCodeRequestTransactionError.Code) {
        switch code {
        case .unknown: self = .unknown
        case .unentitled: self = .unentitled
        case .unknownCallProvider: self = .unknownCallProvider
        case .emptyTransaction: self = .emptyTransaction
        case .unknownCallUUID: self = .unknownCallUUID
        case .callUUIDAlreadyExists: self = .callUUIDAlreadyExists
        case .invalidAction: self = .invalidAction
        case .maximumCallGroupsReached: self = .maximumCallGroupsReached
        case .callIsProtected: self = .callIsProtected
        @unknown default: return nil
        }
    }
}

#endif
