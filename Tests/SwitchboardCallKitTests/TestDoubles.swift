#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardWire
@testable import SwitchboardCallKit

/// A `CallSystemDelegate` that records every callback, in order.
final class RecordingCallSystemDelegate: CallSystemDelegate {
    enum Event: Sendable {
        case perform(CallSystemAction)
        case timedOut(CallSystemAction)
        case didActivateAudioSession
        case didDeactivateAudioSession
        case didReset

        /// The event without its action, for comparing sequences.
        var name: String {
            switch self {
            case .perform(let action): "perform \(action.kind)"
            case .timedOut(let action): "timedOut \(action.kind)"
            case .didActivateAudioSession: "didActivate"
            case .didDeactivateAudioSession: "didDeactivate"
            case .didReset: "didReset"
            }
        }
    }

    private let recorded = Mutex<[Event]>([])

    var events: [Event] { recorded.withLock { $0 } }
    var names: [String] { events.map(\.name) }
    var performed: [CallSystemAction] {
        events.compactMap { if case .perform(let action) = $0 { action } else { nil } }
    }

    func callSystemDidReset() { recorded.withLock { $0.append(.didReset) } }
    func callSystem(perform action: CallSystemAction) { recorded.withLock { $0.append(.perform(action)) } }
    func callSystem(timedOutPerforming action: CallSystemAction) { recorded.withLock { $0.append(.timedOut(action)) } }
    func callSystemDidActivateAudioSession() { recorded.withLock { $0.append(.didActivateAudioSession) } }
    func callSystemDidDeactivateAudioSession() { recorded.withLock { $0.append(.didDeactivateAudioSession) } }
}

/// A push handler that records every push. Given a call system, it behaves as the coordinator
/// must: it reports the push's call at once and runs PushKit's completion from the report's
/// completion; with `mustReport == false` (or no call system) it skips the report and
/// completes at once.
final class RecordingVoIPPushHandler: VoIPPushHandling {
    struct Received: Sendable, Equatable {
        var callID: String?
        var mustReport: Bool
    }

    private let callSystem: (any CallSystem)?
    private let received = Mutex<[Received]>([])
    private let reportResults = Mutex<[CallSystemError?]>([])

    init(reportingThrough callSystem: (any CallSystem)? = nil) { self.callSystem = callSystem }

    var pushes: [Received] { received.withLock { $0 } }
    var reportErrors: [CallSystemError?] { reportResults.withLock { $0 } }

    func handleVoIPPush(_ payload: [AnyHashable: Any], mustReport: Bool, completion: @escaping @Sendable () -> Void) {
        let push = IncomingCallPush(dictionary: payload)
        received.withLock { $0.append(Received(callID: push?.callID, mustReport: mustReport)) }
        guard mustReport, let push, let callSystem else {
            completion()
            return
        }
        callSystem.reportNewIncomingCall(uuid: CallIdentity.uuid(forCallID: push.callID), update: push.update) {
            error in
            self.reportResults.withLock { $0.append(error) }
            completion()
        }
    }
}

/// A `VoIPDeviceRegistering` that records calls into a stream a test can await, and fails
/// while `failure` is set.
final class RecordingDeviceRegistrar: VoIPDeviceRegistering {
    enum Call: Sendable, Equatable {
        case register(deviceID: UUID, pushToken: String, environment: PushEnvironment)
        case registerWithKey(deviceID: UUID, pushToken: String, environment: PushEnvironment, keyID: String)
        case unregister(deviceID: UUID)
    }

    struct Refused: Error, Equatable {}

    let calls: AsyncStream<Call>
    private let callsInput: AsyncStream<Call>.Continuation
    private let failing = Mutex(false)

    init() { (calls, callsInput) = AsyncStream.makeStream() }

    func fail(_ fail: Bool) { failing.withLock { $0 = fail } }

    func registerVoIPDevice(deviceID: UUID, pushToken: String, environment: PushEnvironment) async throws -> VoIPDevice
    {
        callsInput.yield(.register(deviceID: deviceID, pushToken: pushToken, environment: environment))
        if failing.withLock({ $0 }) { throw Refused() }
        return VoIPDevice(
            deviceId: deviceID.uuidString.lowercased(), environment: environment,
            tokenSuffix: String(pushToken.suffix(8)),
            updatedAt: "2026-01-01T00:00:00.000Z")
    }

    func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration?
    ) async throws -> VoIPDevice {
        guard let payloadKey else {
            return try await registerVoIPDevice(deviceID: deviceID, pushToken: pushToken, environment: environment)
        }
        callsInput.yield(
            .registerWithKey(deviceID: deviceID, pushToken: pushToken, environment: environment, keyID: payloadKey.id))
        if failing.withLock({ $0 }) { throw Refused() }
        return VoIPDevice(
            deviceId: deviceID.uuidString.lowercased(), environment: environment,
            tokenSuffix: String(pushToken.suffix(8)),
            payloadKeyId: payloadKey.id, updatedAt: "2026-01-01T00:00:00.000Z")
    }

    func unregisterVoIPDevice(deviceID: UUID) async throws {
        callsInput.yield(.unregister(deviceID: deviceID))
        if failing.withLock({ $0 }) { throw Refused() }
    }
}

/// A one-shot flag a `@Sendable` completion can set.
final class Flag: Sendable {
    private let count = Mutex(0)
    func set() { count.withLock { $0 += 1 } }
    var timesSet: Int { count.withLock { $0 } }
}

#endif
