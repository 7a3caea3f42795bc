import Foundation
import SwitchboardCallKit
import SwitchboardKit

/// Stands between the process-long `VoIPPushReceiver` and whoever is signed in now: PushKit
/// keeps one receiver for the life of the process, while the signed-in user, their token and
/// the server change with sign-in, sign-out and a server change.
///
/// - Pushes go to the current `CallCoordinator`, which reports them to CallKit before it
///   returns (SPEC §4 rule 1). With nobody signed in (a push already on its way when the user
///   signed out) the push is still reported, synchronously, and ended at once.
/// - Token registrations go to the current client (its token binds the device to the
///   session); with nobody signed in they fail, and the app registers again after login.
// @unchecked Sendable: `current` is read and written only under `lock`; every other stored
// property is a Sendable `let`.
final class SessionRouter: VoIPPushHandling, VoIPDeviceRegistering, @unchecked Sendable {
    private struct Current: Sendable {
        var client: SwitchboardClient?
        var coordinator: CallCoordinator?
    }

    /// Signed out: there is no client to register the token with.
    struct NotSignedIn: Error, CustomStringConvertible {
        var description: String { "not signed in" }
    }

    private let lock = NSLock()
    private var current = Current()
    private let callSystem: any CallSystem

    init(callSystem: any CallSystem) {
        self.callSystem = callSystem
    }

    /// The session pushes and registrations go to from now on.
    func install(client: SwitchboardClient, coordinator: CallCoordinator) {
        lock.withLock { current = Current(client: client, coordinator: coordinator) }
    }

    /// Nobody is signed in any more.
    func clear() {
        lock.withLock { current = Current() }
    }

    // MARK: VoIPPushHandling

    func handleVoIPPush(_ payload: [AnyHashable: Any], mustReport: Bool, completion: @escaping @Sendable () -> Void) {
        if let coordinator = lock.withLock({ current.coordinator }) {
            coordinator.handleVoIPPush(payload, mustReport: mustReport, completion: completion)
            return
        }
        guard mustReport else {
            completion()
            return
        }
        // Report first, then end: iOS stops delivering VoIP pushes to an app that does not
        // report them. The UUID is the call's (CallIdentity), as the coordinator's would be.
        let uuid = (payload["callId"] as? String).map(CallIdentity.uuid(forCallID:)) ?? UUID()
        let caller = payload["callerName"] as? String ?? "Switchboard"
        let callSystem = self.callSystem
        callSystem.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: caller, callerName: caller)) { error in
            if error == nil { callSystem.reportCallEnded(uuid: uuid, at: Date(), reason: .failed) }
            completion()
        }
    }

    // MARK: VoIPDeviceRegistering

    func registerVoIPDevice(deviceID: UUID, pushToken: String, environment: PushEnvironment) async throws -> VoIPDevice
    {
        try await signedInClient().registerVoIPDevice(
            deviceID: deviceID, pushToken: pushToken, environment: environment)
    }

    func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration?
    ) async throws -> VoIPDevice {
        try await signedInClient().registerVoIPDevice(
            deviceID: deviceID, pushToken: pushToken, environment: environment, payloadKey: payloadKey)
    }

    func unregisterVoIPDevice(deviceID: UUID) async throws {
        try await signedInClient().unregisterVoIPDevice(deviceID: deviceID)
    }

    private func signedInClient() throws -> SwitchboardClient {
        guard let client = lock.withLock({ current.client }) else { throw NotSignedIn() }
        return client
    }
}
