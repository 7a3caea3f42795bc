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

/// The app's PushKit delegate: owns the `PKPushRegistry`, keeps the server's copy of the VoIP
/// token current, and hands every VoIP push to the call coordinator, which reports it to
/// CallKit before PushKit's completion runs (SPEC §4 rule 1).
///
/// Create it at launch, after the coordinator (a push can wake the app at any moment), and run
/// it for as long as the app lives:
///
/// ```swift
/// let receiver = VoIPPushReceiver(handler: coordinator, registrar: client, deviceID: installationID,
///                                 environment: .production)
/// Task { await receiver.run() }
/// // After every login: receiver.registerCurrentToken()
/// ```
// @unchecked Sendable: every stored property is a `let` and Sendable, except `registry`,
// which is touched only in `init` and then on `queue` (PushKit calls the delegate there and
// `registerCurrentToken()` hops there).
public final class VoIPPushReceiver: NSObject, PKPushRegistryDelegate, @unchecked Sendable {
    /// What the server should know about this device's token.
    private enum DeviceOperation: Sendable {
        case register(token: String)
        case unregister
    }

    let registry: PKPushRegistry
    private let queue: DispatchQueue
    private let handler: any VoIPPushHandling
    private let registrar: any VoIPDeviceRegistering
    private let registrationFailed: @Sendable (VoIPDeviceRegistrationError) -> Void
    /// Holds only the newest wish: a token replaced or invalidated before `run()` got to it is
    /// never sent.
    private let operations: AsyncStream<DeviceOperation>
    private let operationsInput: AsyncStream<DeviceOperation>.Continuation

    /// The installation's id on the server; stable across launches (the app stores it).
    public let deviceID: UUID
    public let environment: PushEnvironment
    /// Sent with every registration: the key the device's VoIP pushes are encrypted with.
    public let payloadKey: PayloadKeyRegistration?

    /// Creates the registry and asks for VoIP pushes.
    ///
    /// - Parameters:
    ///   - handler: takes every VoIP push (the `CallCoordinator`).
    ///   - registrar: binds and unbinds the token on the server.
    ///   - deviceID: this installation's stable id.
    ///   - environment: the APNs environment the app was signed for.
    ///   - payloadKey: the key the server encrypts this device's VoIP pushes with
    ///     (`VoIPPayloadKey.registration`); give the coordinator the matching decryptor.
    ///   - queue: the serial queue PushKit calls the receiver on.
    ///   - registrationFailed: receives failed registrations (any thread).
    public init(
        handler: any VoIPPushHandling,
        registrar: any VoIPDeviceRegistering,
        deviceID: UUID,
        environment: PushEnvironment,
        payloadKey: PayloadKeyRegistration? = nil,
        queue: DispatchQueue = DispatchQueue(label: "switchboard.voip-push"),
        registrationFailed: @escaping @Sendable (VoIPDeviceRegistrationError) -> Void = { _ in }
    ) {
        self.handler = handler
        self.registrar = registrar
        self.deviceID = deviceID
        self.environment = environment
        self.payloadKey = payloadKey
        self.queue = queue
        self.registrationFailed = registrationFailed
        (operations, operationsInput) = AsyncStream.makeStream(
            of: DeviceOperation.self, bufferingPolicy: .bufferingNewest(1))
        registry = PKPushRegistry(queue: queue)
        super.init()
        // The delegate first: once VoIP pushes are desired, one may be delivered at any moment.
        registry.delegate = self
        registry.desiredPushTypes = [.voIP]
    }

    deinit {
        operationsInput.finish()
    }

    /// Sends token changes to the server, one at a time, newest wish last, until cancelled.
    /// Run it once per receiver.
    public func run() async {
        for await operation in operations {
            do {
                switch operation {
                case .register(let token):
                    _ = try await registrar.registerVoIPDevice(
                        deviceID: deviceID, pushToken: token, environment: environment, payloadKey: payloadKey)
                case .unregister:
                    try await registrar.unregisterVoIPDevice(deviceID: deviceID)
                }
            } catch {
                let kind: VoIPDeviceRegistrationError.Operation
                switch operation {
                case .register: kind = .register
                case .unregister: kind = .unregister
                }
                registrationFailed(VoIPDeviceRegistrationError(operation: kind, underlying: error))
            }
        }
    }

    /// Registers the token PushKit holds now, if any: call it after every login (the server
    /// binds the device to the session that registers it) and to retry a failed registration.
    public func registerCurrentToken() {
        queue.async { [self] in
            guard let token = registry.pushToken(for: .voIP) else { return }
            operationsInput.yield(.register(token: Self.hex(token)))
        }
    }

    // MARK: PKPushRegistryDelegate

    public func pushRegistry(
        _ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType
    ) {
        guard type == .voIP else { return }
        operationsInput.yield(.register(token: Self.hex(pushCredentials.token)))
    }

    public func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType) {
        guard type == .voIP else { return }
        operationsInput.yield(.unregister)
    }

    /// Before iOS 26.4 every VoIP push must be reported.
    public func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping @Sendable () -> Void
    ) {
        guard type == .voIP else {
            completion()
            return
        }
        handler.handleVoIPPush(payload.dictionaryPayload, mustReport: true, completion: completion)
    }

    #if compiler(>=6.3)  // the iOS 26.4 SDK (Xcode 26.4); older Xcodes cannot name PKVoIPPushMetadata
    /// From iOS 26.4 the system calls this instead, and says whether the push must be reported.
    @available(iOS 26.4, *)
    public func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingVoIPPushWith payload: PKPushPayload, metadata: PKVoIPPushMetadata,
        withCompletionHandler completion: @escaping @Sendable () -> Void
    ) {
        handler.handleVoIPPush(payload.dictionaryPayload, mustReport: metadata.mustReport, completion: completion)
    }
    #endif

    /// Lowercase hex, as the server stores tokens.
    static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(data.count * 2)
        for byte in data {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

#endif
