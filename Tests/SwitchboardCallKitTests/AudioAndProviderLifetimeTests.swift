#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Synchronization
import Testing
import SwitchboardKit
@testable import SwitchboardCallKit

extension CallKitAdapterSuite {
    @Suite("Audio session: configured on start and answer, never activated by the app", .timeLimit(.minutes(3)))
    struct AudioSessionTests {
        @Test func aWholeCallConfiguresTheSessionButNeverActivatesIt() throws {
            let session = AVAudioSession.sharedInstance()
            let categoryCallsBefore = session._stubCategoryCalls.count
            try withCallSystem { system, provider, delegate in
                let cxDelegate = try providerDelegate(of: provider)
                let incoming = UUID(), outgoing = UUID()
                system.reportNewIncomingCall(uuid: incoming, update: CallUpdate(handle: "user-5", hasVideo: true)) {
                    _ in
                }
                #expect(session._stubCategoryCalls.count == categoryCallsBefore)  // not before an action

                ProviderAction.answer.perform(on: cxDelegate, provider: provider, callUUID: incoming)
                cxDelegate.provider(provider, didActivate: session)
                ProviderAction.end.perform(on: cxDelegate, provider: provider, callUUID: incoming)
                cxDelegate.provider(provider, didDeactivate: session)
                ProviderAction.startAudio.perform(on: cxDelegate, provider: provider, callUUID: outgoing)
                cxDelegate.provider(provider, didActivate: session)
                for action in delegate.performed { action.fulfill() }
                cxDelegate.providerDidReset(provider)

                let configured = Array(session._stubCategoryCalls.dropFirst(categoryCallsBefore))
                #expect(
                    configured == [
                        .init(
                            category: .playAndRecord, mode: .voiceChat,
                            options: [.allowBluetoothHFP, .defaultToSpeaker]),
                        .init(category: .playAndRecord, mode: .voiceChat, options: [.allowBluetoothHFP]),
                    ])
                #expect(session._stubActiveCalls.isEmpty)
            }
        }

        @Test func theOptionsFollowTheSettings() {
            #expect(AudioSessionConfigurator().options(video: false) == [.allowBluetoothHFP])
            #expect(AudioSessionConfigurator().options(video: true) == [.allowBluetoothHFP, .defaultToSpeaker])
            #expect(AudioSessionConfigurator(allowsBluetooth: false, speakerForVideo: false).options(video: true) == [])
            #expect(AudioSessionConfigurator.init().options(video: false).rawValue == 0x4)  // AVAudioSessionCategoryOptionAllowBluetooth
        }

        @Test func withoutAConfiguratorTheSessionIsLeftToTheApp() throws {
            let session = AVAudioSession.sharedInstance()
            let before = session._stubCategoryCalls.count
            try withCallSystem(audioSession: nil) { _, provider, delegate in
                ProviderAction.answer.perform(
                    on: try providerDelegate(of: provider), provider: provider, callUUID: UUID())
                #expect(delegate.performed.count == 1)
            }
            #expect(session._stubCategoryCalls.count == before)
        }

        @Test func aSessionThatRefusesTheCategoryIsReportedAndTheAnswerStillReachesTheApp() throws {
            struct Busy: Error {}
            let session = AVAudioSession.sharedInstance()
            let failures = Mutex(0)
            session._stubFailSetCategory(with: Busy())
            defer { session._stubFailSetCategory(with: nil) }
            try withCallSystem(audioSessionFailed: { error in
                if error is Busy { failures.withLock { $0 += 1 } }
            }) { _, provider, delegate in
                ProviderAction.answer.perform(
                    on: try providerDelegate(of: provider), provider: provider, callUUID: UUID())
                #expect(delegate.names == ["perform answer"])
            }
            #expect(failures.withLock { $0 } == 1)
        }
    }

    @Suite("One CXProvider per process", .timeLimit(.minutes(3)))
    struct OneProviderTests {
        // A second live one stops the process through a `precondition`. That is not run here as an
        // exit test: spawning a copy of the whole test process starved (and once crashed) the
        // parallel suite on the 2-core machine. The place it guards is checked instead.
        @Test func theProviderPlaceIsTakenWhileACallSystemLives() {
            #expect(!CallKitCallSystem.providerExists)
            let first = CallKitCallSystem()
            #expect(CallKitCallSystem.providerExists, "a second CallKitCallSystem would stop the process now")
            first.invalidate()
            #expect(!CallKitCallSystem.providerExists)
        }

        @Test func invalidatingTheProviderMakesRoomForANewOne() {
            let first = CallKitCallSystem()
            first.invalidate()
            #expect(first.provider._stubIsInvalidated)

            let second = CallKitCallSystem()
            #expect(second.provider !== first.provider)
            #expect(!second.provider._stubIsInvalidated)
            second.invalidate()
        }

        @Test func releasingTheCallSystemMakesRoomForANewOne() {
            do {
                let first = CallKitCallSystem()
                withExtendedLifetime(first) {}
            }
            let second = CallKitCallSystem()
            second.invalidate()
        }
    }
}

#endif
