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

/// The server calls that bind and unbind this installation's VoIP token
/// (`POST /voip/devices`, `DELETE /voip/devices/{deviceId}`). `SwitchboardClient` is the real
/// one; give `VoIPPushReceiver` one that uses the current session's token.
public protocol VoIPDeviceRegistering: Sendable {
    func registerVoIPDevice(deviceID: UUID, pushToken: String, environment: PushEnvironment) async throws -> VoIPDevice
    /// With the payload key the device's VoIP pushes are encrypted with (nil: plain pushes).
    func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration?
    ) async throws -> VoIPDevice
    func unregisterVoIPDevice(deviceID: UUID) async throws
}

extension VoIPDeviceRegistering {
    /// A registrar written before payload keys: it can register plain pushes only.
    public func registerVoIPDevice(
        deviceID: UUID, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration?
    ) async throws -> VoIPDevice {
        guard payloadKey == nil else { throw VoIPPayloadKeyUnsupported() }
        return try await registerVoIPDevice(deviceID: deviceID, pushToken: pushToken, environment: environment)
    }
}

/// The registrar cannot send a payload key (it implements only the three-argument register).
public struct VoIPPayloadKeyUnsupported: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "this VoIPDeviceRegistering cannot register a payload key" }
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
