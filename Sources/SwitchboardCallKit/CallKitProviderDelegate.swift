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

/// The `CXProviderDelegate` of `CallKitCallSystem`: turns each provider callback into the
/// matching `CallSystemDelegate` event. The provider holds it weakly; the call system keeps it.
///
/// Start and answer actions set the audio session up (never active) before the app sees them,
/// so the session is ready when CallKit activates it. Grouping and DTMF are not supported and
/// fail at once.
final class CallKitProviderDelegate: NSObject, CXProviderDelegate {
    private let relay: ProviderEventRelay
    private let audioSession: AudioSessionConfigurator?
    private let audioSessionFailed: @Sendable (any Error) -> Void

    init(
        relay: ProviderEventRelay, audioSession: AudioSessionConfigurator?,
        audioSessionFailed: @escaping @Sendable (any Error) -> Void
    ) {
        self.relay = relay
        self.audioSession = audioSession
        self.audioSessionFailed = audioSessionFailed
        super.init()
    }

    func providerDidReset(_ provider: CXProvider) {
        relay.reset()
    }

    func provider(_ provider: CXProvider, perform action: CXStartCallAction) {
        relay.noteCall(action.callUUID, hasVideo: action.isVideo)
        configureAudioSession(video: action.isVideo)
        relay.perform(action, kind: .start(handle: action.handle.value, hasVideo: action.isVideo))
    }

    func provider(_ provider: CXProvider, perform action: CXAnswerCallAction) {
        configureAudioSession(video: relay.hasVideo(action.callUUID))
        relay.perform(action, kind: .answer)
    }

    func provider(_ provider: CXProvider, perform action: CXEndCallAction) {
        relay.forgetCall(action.callUUID)
        relay.perform(action, kind: .end)
    }

    func provider(_ provider: CXProvider, perform action: CXSetHeldCallAction) {
        relay.perform(action, kind: .setHeld(action.isOnHold))
    }

    func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction) {
        relay.perform(action, kind: .setMuted(action.isMuted))
    }

    func provider(_ provider: CXProvider, perform action: CXSetGroupCallAction) {
        action.fail()
    }

    func provider(_ provider: CXProvider, perform action: CXPlayDTMFCallAction) {
        action.fail()
    }

    func provider(_ provider: CXProvider, timedOutPerforming action: CXAction) {
        relay.timedOut(actionID: action.uuid)
    }

    func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession) {
        relay.send(.didActivateAudioSession)
    }

    func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession) {
        relay.send(.didDeactivateAudioSession)
    }

    private func configureAudioSession(video: Bool) {
        guard let audioSession else { return }
        do {
            try audioSession.configure(AVAudioSession.sharedInstance(), video: video)
        } catch {
            audioSessionFailed(error)
        }
    }
}

#endif
