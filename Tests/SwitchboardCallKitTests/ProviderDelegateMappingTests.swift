#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Testing
import SwitchboardKit
@testable import SwitchboardCallKit

extension CallKitAdapterSuite {
    @Suite("CXProviderDelegate → CallSystemDelegate", .timeLimit(.minutes(3)))
    struct ProviderDelegateMappingTests {
        @Test(arguments: ProviderAction.allCases)
        func eachActionReachesTheDelegateOnceAndWaitsForTheApp(_ kind: ProviderAction) throws {
            try withCallSystem { _, provider, delegate in
                let call = UUID()
                let action = kind.perform(on: try providerDelegate(of: provider), provider: provider, callUUID: call)

                #expect(delegate.names == ["perform \(kind.expectedKind)"])
                let handedOver = try #require(delegate.performed.first)
                #expect(handedOver.callUUID == call)
                #expect(handedOver.kind == kind.expectedKind)
                #expect(handedOver.id == action.uuid)
                // The adapter never completes an action on the app's behalf (rule 5: an answer
                // waits for the server and media).
                #expect(action._stubCompletions.isEmpty)
            }
        }

        @Test(arguments: ProviderAction.allCases, [CallSystemAction.Completion.fulfilled, .failed])
        func completingTheActionCompletesTheCallKitAction(
            _ kind: ProviderAction, _ completion: CallSystemAction.Completion
        ) throws {
            try withCallSystem { _, provider, delegate in
                let action = kind.perform(on: try providerDelegate(of: provider), provider: provider, callUUID: UUID())
                let handedOver = try #require(delegate.performed.first)

                switch completion {
                case .fulfilled: handedOver.fulfill()
                case .failed: handedOver.fail()
                }

                #expect(action._stubCompletions == [completion == .fulfilled ? .fulfilled : .failed])
            }
        }

        @Test func groupingAndTouchTonesFailAtOnceWithoutBotheringTheApp() throws {
            try withCallSystem { _, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let group = CXSetGroupCallAction(call: UUID(), callUUIDToGroupWith: UUID())
                let tones = CXPlayDTMFCallAction(call: UUID(), digits: "12#", type: .singleTone)

                cxDelegate.provider(provider, perform: group)
                cxDelegate.provider(provider, perform: tones)

                #expect(group._stubCompletions == [.failed])
                #expect(tones._stubCompletions == [.failed])
                #expect(delegate.events.isEmpty)
            }
        }

        @Test func aTimeoutNamesTheSameActionTheAppWasHanded() throws {
            try withCallSystem { _, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let answer = ProviderAction.answer.perform(on: cxDelegate, provider: provider, callUUID: UUID())

                cxDelegate.provider(provider, timedOutPerforming: answer)

                #expect(delegate.names == ["perform answer", "timedOut answer"])
                guard case .perform(let handedOver) = delegate.events[0],
                    case .timedOut(let timedOut) = delegate.events[1]
                else {
                    Issue.record("unexpected events \(delegate.names)")
                    return
                }
                #expect(handedOver === timedOut)
            }
        }

        @Test func aCompletedOrUnknownActionIsNotReportedAsTimedOut() throws {
            try withCallSystem { _, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let end = ProviderAction.end.perform(on: cxDelegate, provider: provider, callUUID: UUID())
                try #require(delegate.performed.first).fulfill()

                cxDelegate.provider(provider, timedOutPerforming: end)
                cxDelegate.provider(provider, timedOutPerforming: CXAnswerCallAction(call: UUID()))

                #expect(delegate.names == ["perform end"])
            }
        }

        @Test func audioSessionActivationAndResetReachTheDelegateInOrder() throws {
            try withCallSystem { _, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let session = AVAudioSession.sharedInstance()

                cxDelegate.provider(provider, didActivate: session)
                cxDelegate.provider(provider, didDeactivate: session)
                cxDelegate.providerDidReset(provider)

                #expect(delegate.names == ["didActivate", "didDeactivate", "didReset"])
            }
        }

        @Test func resetForgetsPendingActionsSoTheirTimeoutsAreDropped() throws {
            try withCallSystem { _, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let answer = ProviderAction.answer.perform(on: cxDelegate, provider: provider, callUUID: UUID())

                cxDelegate.providerDidReset(provider)
                cxDelegate.provider(provider, timedOutPerforming: answer)

                #expect(delegate.names == ["perform answer", "didReset"])
            }
        }

        @Test func callbacksBeforeTheAppSetsItsDelegateWaitForItInOrder() throws {
            try withCallSystem(setsDelegate: false) { system, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let call = UUID()
                // A cold launch from the lock screen: CallKit asks to answer before the app is ready.
                let answer = ProviderAction.answer.perform(on: cxDelegate, provider: provider, callUUID: call)
                cxDelegate.provider(provider, didActivate: AVAudioSession.sharedInstance())
                #expect(delegate.events.isEmpty)

                system.setDelegate(delegate)

                #expect(delegate.names == ["perform answer", "didActivate"])
                try #require(delegate.performed.first).fulfill()
                #expect(answer._stubCompletions == [.fulfilled])
            }
        }

        @Test func theProviderDelegateRunsOnTheGivenSerialQueue() throws {
            let queue = DispatchQueue(label: "test.callkit")
            let system = CallKitCallSystem(delegateQueue: queue)
            defer { system.invalidate() }
            #expect(system.provider._stubDelegateQueue === queue)
        }
    }
}

#endif
