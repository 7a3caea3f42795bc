#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Testing
import SwitchboardKit
@testable import SwitchboardCallKit

/// Every test that creates a `CallKitCallSystem` lives under this suite: a process may hold
/// only one provider at a time, so these tests run one after another.
@Suite("CallKit adapter", .serialized, .timeLimit(.minutes(3)))
struct CallKitAdapterSuite {}

/// Runs `body` with a fresh call system (its stub provider) and a recording delegate, then
/// invalidates the system so the next test may create one.
func withCallSystem<Result>(
    _ configuration: CallKitConfiguration = CallKitConfiguration(),
    audioSession: AudioSessionConfigurator? = AudioSessionConfigurator(),
    setsDelegate: Bool = true,
    audioSessionFailed: @escaping @Sendable (any Error) -> Void = { _ in },
    _ body: (CallKitCallSystem, CXProvider, RecordingCallSystemDelegate) throws -> Result
) rethrows -> Result {
    let system = CallKitCallSystem(
        configuration: configuration, audioSession: audioSession, audioSessionFailed: audioSessionFailed)
    defer { system.invalidate() }
    let delegate = RecordingCallSystemDelegate()
    if setsDelegate { system.setDelegate(delegate) }
    return try withExtendedLifetime(delegate) { try body(system, system.provider, delegate) }
}

/// The provider's delegate, as CallKit would call it.
func providerDelegate(of provider: CXProvider) throws -> any CXProviderDelegate {
    try #require(provider._stubDelegate, "the call system did not set a provider delegate")
}

/// Each call action CallKit can hand the provider delegate, with what the app should see.
enum ProviderAction: String, CaseIterable, Sendable {
    case startAudio, startVideo, answer, end, hold, unhold, mute, unmute

    var expectedKind: CallActionKind {
        switch self {
        case .startAudio: .start(handle: "user-7", hasVideo: false)
        case .startVideo: .start(handle: "user-7", hasVideo: true)
        case .answer: .answer
        case .end: .end
        case .hold: .setHeld(true)
        case .unhold: .setHeld(false)
        case .mute: .setMuted(true)
        case .unmute: .setMuted(false)
        }
    }

    /// Creates the CallKit action and calls the delegate method for its class, as CallKit does.
    @discardableResult
    func perform(on delegate: any CXProviderDelegate, provider: CXProvider, callUUID: UUID) -> CXCallAction {
        switch self {
        case .startAudio, .startVideo:
            let action = CXStartCallAction(call: callUUID, handle: CXHandle(type: .generic, value: "user-7"))
            action.isVideo = self == .startVideo
            delegate.provider(provider, perform: action)
            return action
        case .answer:
            let action = CXAnswerCallAction(call: callUUID)
            delegate.provider(provider, perform: action)
            return action
        case .end:
            let action = CXEndCallAction(call: callUUID)
            delegate.provider(provider, perform: action)
            return action
        case .hold, .unhold:
            let action = CXSetHeldCallAction(call: callUUID, onHold: self == .hold)
            delegate.provider(provider, perform: action)
            return action
        case .mute, .unmute:
            let action = CXSetMutedCallAction(call: callUUID, muted: self == .mute)
            delegate.provider(provider, perform: action)
            return action
        }
    }
}

#endif
