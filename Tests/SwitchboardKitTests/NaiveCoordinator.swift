import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// A coordinator written the way the public bug threads show apps doing it (callkit-facts §2):
/// it fetches before reporting, gives each path its own UUID, clears only local state when a
/// call ends or fails, fulfils answers at once and hands them to a UI that may not be there,
/// and starts audio as soon as media joined. Each scenario must fail with it, so the scenario
/// is known to test something.
final class NaiveCoordinator: CoordinatorUnderTest {
    private struct Call {
        let uuid: UUID
        var active = false
    }

    private struct State {
        var calls: [String: Call] = [:]
        var byUUID: [UUID: String] = [:]
        var media: [String: any MediaSession] = [:]
        /// The app's UI exists (foreground); answers are handed to it.
        var uiAttached = true
    }

    /// Which audio mistake it makes.
    enum AudioStrategy { case startOnJoin, startOnActivation }

    let audio: AudioStrategy
    let backend: any CallBackend
    let callSystem: any CallSystem
    let makeMedia: @Sendable (String) -> any MediaSession
    private let state = Mutex(State())

    init(
        backend: any CallBackend, callSystem: any CallSystem, media: @escaping @Sendable (String) -> any MediaSession,
        audio: AudioStrategy = .startOnJoin
    ) {
        self.audio = audio
        self.backend = backend
        self.callSystem = callSystem
        makeMedia = media
        callSystem.setDelegate(self)
    }

    func setUIAttached(_ attached: Bool) { state.withLock { $0.uiAttached = attached } }

    // Mistake: fetch first, report later; complete at once.
    func handleVoIPPush(_ payload: [AnyHashable: Any], mustReport: Bool, completion: @escaping @Sendable () -> Void) {
        let callID = payload["callId"] as? String ?? ""
        Task {
            guard let call = try? await backend.call(callID), call.state == .ringing else { return }
            report(call)
        }
        completion()
    }

    func handle(events: [Event]) async {
        for event in events where event.kind == EventKind.callChanged {
            guard let callID = event.callId, let call = try? await backend.call(callID) else { continue }
            let known = state.withLock { $0.calls[callID] }
            if call.state == .ringing, call.createdBy != "me", known == nil || known?.active == false {
                // Mistake: a fresh UUID for the event path.
                report(call)
            } else if call.state == .ended {
                // Mistake: forget locally, never tell the call system.
                state.withLock { _ = $0.calls.removeValue(forKey: callID) }
                state.withLock { $0.media.removeValue(forKey: callID) }?.leave()
            } else if call.state == .active, known != nil, call.createdBy == "me" {
                await connectMedia(callID)
            }
        }
    }

    func startCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, handle: String, clientID: UUID
    ) async throws -> String {
        let call = try await backend.createCall(scopeKind: scopeKind, scopeID: scopeID, mode: mode, clientID: clientID)
        let uuid = CallIdentity.uuid(forCallID: call.id)
        state.withLock { state in
            state.calls[call.id] = Call(uuid: uuid)
            state.byUUID[uuid] = call.id
        }
        callSystem.requestTransaction(CallActionRequest(callUUID: uuid, kind: .start(handle: handle, hasVideo: false)))
        { _ in }
        return call.id
    }

    private func report(_ call: CallInfo) {
        let uuid = UUID()
        state.withLock { state in
            state.calls[call.id] = Call(uuid: uuid)
            state.byUUID[uuid] = call.id
        }
        callSystem.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: call.scopeId)) { _ in }
    }

    private func connectMedia(_ callID: String) async {
        do {
            let token = try await backend.mediaToken(forCall: callID)
            let session = makeMedia(callID)
            try await session.join(url: token.url, token: token.token)
            state.withLock { $0.media[callID] = session }
            // Mistake: start audio as soon as the engine exists (whether or not the session is active).
            if audio == .startOnJoin { session.startAudio() }
        } catch {
            // Mistake: clear local state only.
            state.withLock { _ = $0.calls.removeValue(forKey: callID) }
        }
    }

    // MARK: CallSystemDelegate

    func callSystemDidReset() {}

    func callSystem(perform action: CallSystemAction) {
        let callID = state.withLock { $0.byUUID[action.callUUID] }
        switch action.kind {
        case .answer:
            // Mistake: fulfil at once, let the UI do the rest (if it is there).
            action.fulfill()
            guard let callID, state.withLock({ $0.uiAttached }) else { return }
            Task {
                _ = try? await backend.perform(.accept, onCall: callID)
                await connectMedia(callID)
            }
        case .start:
            action.fulfill()
        case .end:
            guard let callID else {
                action.fail()
                return
            }
            action.fulfill()
            Task { _ = try? await backend.perform(.leave, onCall: callID) }
        default:
            action.fulfill()
        }
    }

    func callSystem(timedOutPerforming action: CallSystemAction) {}

    // Mistake: audio only if the engine happens to exist now; never again later.
    func callSystemDidActivateAudioSession() {
        guard audio == .startOnActivation else { return }
        for session in state.withLock({ Array($0.media.values) }) { session.startAudio() }
    }

    func callSystemDidDeactivateAudioSession() {}
}
