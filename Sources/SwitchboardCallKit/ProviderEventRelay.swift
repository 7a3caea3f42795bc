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

/// The call system's mutable state: the app's delegate, the events waiting for it, the actions
/// handed over and not completed yet, and which calls have video.
///
/// Events reach the delegate in the order CallKit sent them. Until the app sets a delegate (a
/// cold launch for an answer tapped on the lock screen) they wait here instead of being lost.
final class ProviderEventRelay: Sendable {
    enum Event: Sendable {
        case perform(CallSystemAction)
        case timedOut(CallSystemAction)
        case didActivateAudioSession
        case didDeactivateAudioSession
        case didReset
    }

    private struct State {
        weak var delegate: (any CallSystemDelegate)?
        /// Events not delivered yet, oldest first.
        var pending: [Event] = []
        /// Whether one thread is delivering `pending` right now (it delivers them all).
        var delivering = false
        /// Actions handed to the delegate and not completed, by `CXAction.uuid`.
        var actions: [UUID: CallSystemAction] = [:]
        /// Calls reported or started with video, so an answer sets the session up for video.
        var videoCalls: Set<UUID> = []

        /// Whether the caller should deliver: there is a delegate, something to deliver, and no one
        /// delivering already.
        mutating func startDelivering() -> Bool {
            guard delegate != nil, !pending.isEmpty, !delivering else { return false }
            delivering = true
            return true
        }

        /// The next event to deliver, or `nil` (and delivery stops) when there is none or no delegate.
        mutating func nextDelivery() -> (any CallSystemDelegate, Event)? {
            guard let delegate, !pending.isEmpty else {
                delivering = false
                return nil
            }
            return (delegate, pending.removeFirst())
        }
    }

    private let state = LockedState(State())

    func setDelegate(_ delegate: any CallSystemDelegate) {
        let deliver = state.withLock { state -> Bool in
            state.delegate = delegate
            return state.startDelivering()
        }
        if deliver { deliverPending() }
    }

    // MARK: Events from CallKit

    /// Hands `action` to the delegate as a `CallSystemAction` with the same identity; its
    /// completion fulfils or fails the `CXAction`.
    func perform(_ action: CXCallAction, kind: CallActionKind) {
        let handle = ActionHandle(action: action)
        let id = action.uuid
        let callSystemAction = CallSystemAction(callUUID: action.callUUID, kind: kind, id: id) {
            [weak self] completion in
            self?.state.withLock { _ = $0.actions.removeValue(forKey: id) }
            handle.complete(completion)
        }
        state.withLock { $0.actions[id] = callSystemAction }
        send(.perform(callSystemAction))
    }

    /// CallKit gave up on the action with `actionID`: tells the delegate about the same
    /// `CallSystemAction` it was handed. An action already completed is not reported again.
    func timedOut(actionID: UUID) {
        guard let action = state.withLock({ $0.actions.removeValue(forKey: actionID) }) else { return }
        send(.timedOut(action))
    }

    /// Every call is gone: so are the actions pending on them.
    func reset() {
        state.withLock {
            $0.actions.removeAll()
            $0.videoCalls.removeAll()
        }
        send(.didReset)
    }

    func send(_ event: Event) {
        let deliver = state.withLock { state -> Bool in
            state.pending.append(event)
            return state.startDelivering()
        }
        if deliver { deliverPending() }
    }

    // MARK: Video calls

    func noteCall(_ uuid: UUID, hasVideo: Bool) {
        state.withLock {
            if hasVideo { $0.videoCalls.insert(uuid) } else { $0.videoCalls.remove(uuid) }
        }
    }

    func forgetCall(_ uuid: UUID) {
        state.withLock { _ = $0.videoCalls.remove(uuid) }
    }

    func hasVideo(_ uuid: UUID) -> Bool {
        state.withLock { $0.videoCalls.contains(uuid) }
    }

    // MARK: Delivery

    /// Delivers pending events one at a time, outside the lock, until none is left or the
    /// delegate is gone.
    private func deliverPending() {
        while let (delegate, event) = state.withLock({ $0.nextDelivery() }) {
            switch event {
            case .perform(let action): delegate.callSystem(perform: action)
            case .timedOut(let action): delegate.callSystem(timedOutPerforming: action)
            case .didActivateAudioSession: delegate.callSystemDidActivateAudioSession()
            case .didDeactivateAudioSession: delegate.callSystemDidDeactivateAudioSession()
            case .didReset: delegate.callSystemDidReset()
            }
        }
    }
}

/// Carries a `CXAction` into the `@Sendable` completion of its `CallSystemAction`.
///
/// `@unchecked Sendable`: the handle is immutable and only ever calls `fulfill()` or `fail()`,
/// which CallKit accepts from any thread (it forwards the result to the system over XPC;
/// Apple's Speakerbox sample completes actions from arbitrary completion queues).
private struct ActionHandle: @unchecked Sendable {
    let action: CXAction

    func complete(_ completion: CallSystemAction.Completion) {
        switch completion {
        case .fulfilled: action.fulfill()
        case .failed: action.fail()
        }
    }
}

#endif
