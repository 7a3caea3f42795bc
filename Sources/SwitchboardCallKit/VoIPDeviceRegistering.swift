#if canImport(CallKit)
import CallKit
import PushKit
import AVFAudio
#else
import AppleFrameworkStubs
#endif
import Foundation
import SwitchboardKit
import SwitchboardWire

#if !os(macOS)  // CXProvider, VoIP pushes and AVAudioSession do not exist on macOS.

/// The APNs environment the app was signed for, from its `aps-environment` entitlement:
/// `sandbox` for development builds, `production` for TestFlight and the App Store. The app
/// reports it; the server never guesses it.
///
/// ```swift
/// #if DEBUG
/// let environment = PushEnvironment.sandbox
/// #else
/// let environment = PushEnvironment.production
/// #endif
/// ```
public enum PushEnvironment: String, Sendable, CaseIterable {
    case sandbox
    case production
}

/// The server calls that bind and unbind this installation's VoIP token
/// (`POST /voip/devices`, `DELETE /voip/devices/{deviceId}`). `SwitchboardClient` is the real
/// one; give `VoIPPushReceiver` one that uses the current session's token.
public protocol VoIPDeviceRegistering: Sendable {
    func registerVoIPDevice(deviceID: UUID, pushToken: String, environment: String) async throws -> VoIPDevice
    func unregisterVoIPDevice(deviceID: UUID) async throws
}

extension SwitchboardClient: VoIPDeviceRegistering {}

/// A device registration that failed, with what was being done; the token stays as it was on
/// the server. Retry with `VoIPPushReceiver.registerCurrentToken()` (after a login, or when
/// the network is back).
public struct VoIPDeviceRegistrationError: Error, CustomStringConvertible {
    public enum Operation: String, Sendable {
        case register
        case unregister
    }

    public let operation: Operation
    public let underlying: any Error

    public init(operation: Operation, underlying: any Error) {
        self.operation = operation
        self.underlying = underlying
    }

    public var description: String { "VoIP device \(operation.rawValue) failed: \(underlying)" }
}

#endif
