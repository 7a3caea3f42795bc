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

/// The SDK's `CallSystem` over CallKit: the process's one `CXProvider` and a `CXCallController`.
///
/// Create it once, at launch, before the PushKit receiver (a VoIP push must be reported at
/// once), and keep it for the life of the process:
///
/// ```swift
/// let callSystem = CallKitCallSystem(configuration: CallKitConfiguration(ringtoneSound: "ring.caf"))
/// let coordinator = CallCoordinator(..., callSystem: callSystem, ...)  // sets itself as delegate
/// ```
///
/// **One per process.** CallKit misses transactions and leaks calls when a process has more
/// than one provider, so creating a second `CallKitCallSystem` while one is alive is a
/// programmer error and stops the process with a message. `invalidate()` (or releasing the
/// instance) frees the place for a new one.
///
/// Every provider callback reaches the `CallSystemDelegate` in order, on the provider's
/// delegate queue; callbacks that arrive before `setDelegate(_:)` wait for it.
// @unchecked Sendable: every stored property is a `let`. `provider` and `callController`
// are not Sendable in CallKit's Swift interface, but their methods may be called from any
// thread (they pass the request to the system over XPC and answer on their own queues);
// all other mutable state is in `relay`, under a `LockedState`.
public final class CallKitCallSystem: CallSystem, @unchecked Sendable {
    let provider: CXProvider
    let callController: CXCallController
    private let providerDelegate: CallKitProviderDelegate
    private let relay: ProviderEventRelay
    private let supportsHolding: Bool
    /// Whether this instance still holds the process's one provider place.
    private let holdsProviderPlace = LockedState(true)

    /// Whether a `CallKitCallSystem` (and so a `CXProvider`) is alive in this process.
    private static let providerPlaceTaken = LockedState(false)

    /// Whether a `CallKitCallSystem` is alive in this process now (creating another one stops
    /// the process).
    public static var providerExists: Bool { providerPlaceTaken.withLock { $0 } }

    /// Creates the process's provider.
    ///
    /// - Parameters:
    ///   - configuration: how calls appear in the system UI.
    ///   - audioSession: sets the session up for start and answer actions; `nil` leaves the
    ///     audio session entirely to the app (which must still never activate it).
    ///   - delegateQueue: the serial queue for provider callbacks and report completions.
    ///   - audioSessionFailed: receives errors of `AVAudioSession.setCategory` (the call goes on).
    /// - Precondition: no other `CallKitCallSystem` is alive.
    public init(
        configuration: CallKitConfiguration = CallKitConfiguration(),
        audioSession: AudioSessionConfigurator? = AudioSessionConfigurator(),
        delegateQueue: DispatchQueue = DispatchQueue(label: "switchboard.callkit.provider"),
        audioSessionFailed: @escaping @Sendable (any Error) -> Void = { _ in }
    ) {
        let takenBefore = Self.providerPlaceTaken.withLock { taken in
            defer { taken = true }
            return taken
        }
        precondition(
            !takenBefore,
            "A CallKitCallSystem already exists: CallKit allows one CXProvider per process. Keep the first one "
                + "(create it once at launch), or invalidate() it before creating another.")

        relay = ProviderEventRelay()
        providerDelegate = CallKitProviderDelegate(
            relay: relay, audioSession: audioSession, audioSessionFailed: audioSessionFailed)
        supportsHolding = configuration.supportsHolding
        provider = CXProvider(configuration: configuration.providerConfiguration())
        callController = CXCallController()
        provider.setDelegate(providerDelegate, queue: delegateQueue)
    }

    deinit {
        releaseProviderPlace()
    }

    /// Ends every call, stops the provider (the delegate gets `callSystemDidReset()`) and lets
    /// the process create a new `CallKitCallSystem`. Use this instance no more afterwards.
    public func invalidate() {
        provider.invalidate()
        releaseProviderPlace()
    }

    private func releaseProviderPlace() {
        let held = holdsProviderPlace.withLock { held in
            defer { held = false }
            return held
        }
        if held { Self.providerPlaceTaken.withLock { $0 = false } }
    }

    // MARK: CallSystem

    public func setDelegate(_ delegate: any CallSystemDelegate) {
        relay.setDelegate(delegate)
    }

    /// Reports at once (synchronously), as a VoIP push requires; `completion` runs on the
    /// delegate queue when the system showed the call, or with the reason it refused it.
    public func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (CallSystemError?) -> Void
    ) {
        relay.noteCall(uuid, hasVideo: update.hasVideo)
        provider.reportNewIncomingCall(with: uuid, update: CXCallUpdate(update, supportsHolding: supportsHolding)) {
            error in
            completion(error.map(CallSystemError.init(callKitError:)))
        }
    }

    public func reportCallUpdated(uuid: UUID, update: CallUpdate) {
        relay.noteCall(uuid, hasVideo: update.hasVideo)
        provider.reportCall(with: uuid, updated: CXCallUpdate(update, supportsHolding: supportsHolding))
    }

    public func reportOutgoingCallStartedConnecting(uuid: UUID, at date: Date?) {
        provider.reportOutgoingCall(with: uuid, startedConnectingAt: date)
    }

    public func reportOutgoingCallConnected(uuid: UUID, at date: Date?) {
        provider.reportOutgoingCall(with: uuid, connectedAt: date)
    }

    public func reportCallEnded(uuid: UUID, at date: Date?, reason: CallEndReason) {
        relay.forgetCall(uuid)
        provider.reportCall(with: uuid, endedAt: date, reason: CXCallEndedReason(reason))
    }

    /// Requests a one-action `CXTransaction`; `completion` runs on CallKit's queue.
    public func requestTransaction(
        _ request: CallActionRequest, completion: @escaping @Sendable (CallSystemError?) -> Void
    ) {
        callController.request(CXTransaction(action: callKitAction(for: request))) { error in
            completion(error.map(CallSystemError.init(callKitError:)))
        }
    }
}

#endif
