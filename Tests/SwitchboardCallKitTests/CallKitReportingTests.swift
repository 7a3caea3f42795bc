#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Synchronization
import Testing
import SwitchboardKit
@testable import SwitchboardCallKit

extension CallKitAdapterSuite {
    @Suite("CallSystem → CXProvider and CXCallController", .timeLimit(.minutes(3)))
    struct ReportingTests {
        static let endReasons: [(CallEndReason, CXCallEndedReason)] = [
            (.failed, .failed),
            (.remoteEnded, .remoteEnded),
            (.unanswered, .unanswered),
            (.answeredElsewhere, .answeredElsewhere),
            (.declinedElsewhere, .declinedElsewhere),
        ]

        @Test(arguments: endReasons)
        func everyEndReasonReachesCallKitUnderItsName(_ reason: CallEndReason, _ expected: CXCallEndedReason) {
            withCallSystem { system, provider, _ in
                let call = UUID()
                let ended = Date(timeIntervalSince1970: 1_800_000_000)

                system.reportCallEnded(uuid: call, at: ended, reason: reason)

                #expect(provider._stubEndedCallReports == [.init(uuid: call, dateEnded: ended, reason: expected)])
                #expect(reason.rawValue == expected.rawValue)
            }
        }

        @Test func theEndReasonTableCoversEveryReason() {
            #expect(Set(Self.endReasons.map(\.0)) == Set(CallEndReason.allCases))
        }

        @Test func anIncomingCallIsReportedAtOnceWithAGenericHandle() throws {
            try withCallSystem { system, provider, _ in
                let call = UUID()
                let results = Mutex<[CallSystemError?]>([])
                let update = CallUpdate(handle: "group-9", callerName: "Design team", hasVideo: true, isGroup: true)

                system.reportNewIncomingCall(uuid: call, update: update) { error in
                    results.withLock { $0.append(error) }
                }

                let report = try #require(provider._stubIncomingCallReports.first)
                #expect(report.uuid == call)
                #expect(report.update.remoteHandle?.type == .generic)
                #expect(report.update.remoteHandle?.value == "group-9")
                #expect(report.update.localizedCallerName == "Design team")
                #expect(report.update.hasVideo)
                #expect(report.update.supportsHolding)
                #expect(
                    !report.update.supportsGrouping && !report.update.supportsUngrouping && !report.update.supportsDTMF)
                #expect(results.withLock { $0.isEmpty })  // not before the system answered

                provider._stubCompleteIncomingCallReport(0, error: nil)
                #expect(results.withLock { $0 } == [nil])
            }
        }

        @Test func callsCannotBeHeldWhenTheConfigurationSaysSo() {
            withCallSystem(CallKitConfiguration(supportsHolding: false)) { system, provider, _ in
                system.reportCallUpdated(uuid: UUID(), update: CallUpdate(handle: "user-1"))
                guard case .updated(_, let update)? = provider._stubOtherReports.first else {
                    Issue.record("no update reported")
                    return
                }
                #expect(!update.supportsHolding)
            }
        }

        @Test func updatesAndOutgoingProgressReachTheProvider() {
            withCallSystem { system, provider, _ in
                let call = UUID()
                let connecting = Date(timeIntervalSince1970: 1_800_000_000)

                system.reportCallUpdated(uuid: call, update: CallUpdate(handle: "user-2", callerName: "Ada"))
                system.reportOutgoingCallStartedConnecting(uuid: call, at: connecting)
                system.reportOutgoingCallConnected(uuid: call, at: nil)

                let reports = provider._stubOtherReports
                #expect(reports.count == 3)
                if case .updated(let uuid, let update) = reports[0] {
                    #expect(
                        uuid == call && update.remoteHandle?.value == "user-2" && update.localizedCallerName == "Ada")
                } else {
                    Issue.record("first report is \(reports[0])")
                }
                if case .outgoingStartedConnecting(let uuid, let date) = reports[1] {
                    #expect(uuid == call && date == connecting)
                } else {
                    Issue.record("second report is \(reports[1])")
                }
                if case .outgoingConnected(let uuid, let date) = reports[2] {
                    #expect(uuid == call && date == nil)
                } else {
                    Issue.record("third report is \(reports[2])")
                }
            }
        }

        static let requests: [CallActionKind] = [
            .start(handle: "user-3", hasVideo: false), .start(handle: "user-3", hasVideo: true), .answer, .end,
            .setMuted(true), .setMuted(false), .setHeld(true), .setHeld(false),
        ]

        @Test(arguments: requests)
        func eachRequestBecomesAOneActionTransaction(_ kind: CallActionKind) throws {
            try withCallSystem { system, _, _ in
                let call = UUID()
                let results = Mutex<[CallSystemError?]>([])

                system.requestTransaction(CallActionRequest(callUUID: call, kind: kind)) { error in
                    results.withLock { $0.append(error) }
                }

                let request = try #require(system.callController._stubRequests.first)
                #expect(request.transaction.actions.count == 1)
                let action = try #require(request.transaction.actions.first as? CXCallAction)
                #expect(action.callUUID == call)
                switch kind {
                case .start(let handle, let hasVideo):
                    let start = try #require(action as? CXStartCallAction)
                    #expect(start.handle.type == .generic && start.handle.value == handle && start.isVideo == hasVideo)
                case .answer:
                    #expect(action is CXAnswerCallAction)
                case .end:
                    #expect(action is CXEndCallAction)
                case .setMuted(let muted):
                    #expect((action as? CXSetMutedCallAction)?.isMuted == muted)
                case .setHeld(let onHold):
                    #expect((action as? CXSetHeldCallAction)?.isOnHold == onHold)
                }
                #expect(results.withLock { $0.isEmpty })

                system.callController._stubCompleteRequest(0, error: nil)
                #expect(results.withLock { $0 } == [nil])
            }
        }

        @Test func theConfigurationReachesTheProvider() {
            let icon = Data([0x89, 0x50, 0x4e, 0x47])
            let configuration = CallKitConfiguration(
                supportsVideo: false, supportedHandleTypes: [.generic, .phoneNumber], ringtoneSound: "ring.caf",
                iconTemplateImageData: icon, maximumCallsPerCallGroup: 1, includesCallsInRecents: false)
            withCallSystem(configuration) { _, provider, _ in
                let applied = provider.configuration
                #expect(!applied.supportsVideo)
                #expect(applied.supportedHandleTypes == [.generic, .phoneNumber])
                #expect(applied.ringtoneSound == "ring.caf")
                #expect(applied.iconTemplateImageData == icon)
                #expect(applied.maximumCallGroups == 2)
                #expect(applied.maximumCallsPerCallGroup == 1)
                #expect(!applied.includesCallsInRecents)
            }
        }

        @Test func theDefaultsAvoidTheCallGroupLimitOfOne() {
            let defaults = CallKitConfiguration()
            #expect(defaults.maximumCallGroups == 2)
            #expect(defaults.maximumCallsPerCallGroup == 1)
            #expect(defaults.supportedHandleTypes == [.generic])
        }
    }

    @Suite("NSError (domain, code) → CallSystemError", .timeLimit(.minutes(3)))
    struct ErrorMappingTests {
        @Test(arguments: [
            (CXErrorCodeIncomingCallError.Code.unknown, IncomingCallError.unknown),
            (.unentitled, .unentitled),
            (.callUUIDAlreadyExists, .callUUIDAlreadyExists),
            (.filteredByDoNotDisturb, .filteredByDoNotDisturb),
            (.filteredByBlockList, .filteredByBlockList),
            (.filteredDuringRestrictedSharingMode, .filteredDuringRestrictedSharingMode),
            (.callIsProtected, .callIsProtected),
            (.filteredBySensitiveParticipants, .filteredBySensitiveParticipants),
        ])
        func everyIncomingCallRefusalIsNamed(
            _ code: CXErrorCodeIncomingCallError.Code, _ expected: IncomingCallError
        ) throws {
            let error = NSError(domain: "com.apple.CallKit.error.incomingcall", code: code.rawValue)
            #expect(try reportRefused(with: error) == .incomingCall(expected))
            #expect(code.rawValue == expected.rawValue)
        }

        @Test(arguments: [
            (CXErrorCodeRequestTransactionError.Code.unknown, TransactionError.unknown),
            (.unentitled, .unentitled),
            (.unknownCallProvider, .unknownCallProvider),
            (.emptyTransaction, .emptyTransaction),
            (.unknownCallUUID, .unknownCallUUID),
            (.callUUIDAlreadyExists, .callUUIDAlreadyExists),
            (.invalidAction, .invalidAction),
            (.maximumCallGroupsReached, .maximumCallGroupsReached),
            (.callIsProtected, .callIsProtected),
        ])
        func everyTransactionRefusalIsNamed(
            _ code: CXErrorCodeRequestTransactionError.Code, _ expected: TransactionError
        ) throws {
            let error = NSError(domain: "com.apple.CallKit.error.requesttransaction", code: code.rawValue)
            #expect(try transactionRefused(with: error) == .transaction(expected))
            #expect(code.rawValue == expected.rawValue)
        }

        @Test func theTypedSwiftErrorsMapLikeTheirNSErrors() throws {
            #expect(
                try reportRefused(with: CXErrorCodeIncomingCallError(.filteredByBlockList))
                    == .incomingCall(.filteredByBlockList))
            #expect(
                try transactionRefused(with: CXErrorCodeRequestTransactionError(.maximumCallGroupsReached))
                    == .transaction(.maximumCallGroupsReached))
        }

        @Test func unknownCodesAndOtherDomainsAreKeptAsDomainAndCode() throws {
            #expect(
                try reportRefused(with: NSError(domain: "com.apple.CallKit.error.incomingcall", code: 99))
                    == .other("com.apple.CallKit.error.incomingcall 99"))
            #expect(
                try transactionRefused(with: NSError(domain: "com.apple.CallKit.error.requesttransaction", code: -1))
                    == .other("com.apple.CallKit.error.requesttransaction -1"))
            #expect(
                try reportRefused(with: NSError(domain: "com.apple.CallKit.error", code: 3))
                    == .other("com.apple.CallKit.error 3"))
            // The domain decides, not the call that failed: code 3 is "empty transaction" here,
            // not "Do Not Disturb".
            #expect(
                try reportRefused(with: NSError(domain: "com.apple.CallKit.error.requesttransaction", code: 3))
                    == .transaction(.emptyTransaction))
        }

        /// What `reportNewIncomingCall` answers when the system refuses with `error`.
        private func reportRefused(with error: any Error) throws -> CallSystemError? {
            try withCallSystem { system, provider, _ in
                let result = Mutex<CallSystemError??>(nil)
                system.reportNewIncomingCall(uuid: UUID(), update: CallUpdate(handle: "user-4")) { error in
                    result.withLock { $0 = error }
                }
                provider._stubCompleteIncomingCallReport(0, error: error)
                return try #require(result.withLock { $0 }, "no completion")
            }
        }

        /// What `requestTransaction` answers when the system refuses with `error`.
        private func transactionRefused(with error: any Error) throws -> CallSystemError? {
            try withCallSystem { system, _, _ in
                let result = Mutex<CallSystemError??>(nil)
                system.requestTransaction(CallActionRequest(callUUID: UUID(), kind: .end)) { error in
                    result.withLock { $0 = error }
                }
                system.callController._stubCompleteRequest(0, error: error)
                return try #require(result.withLock { $0 }, "no completion")
            }
        }
    }
}

#endif
