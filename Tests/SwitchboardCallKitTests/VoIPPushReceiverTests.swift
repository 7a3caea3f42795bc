#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire
@testable import SwitchboardCallKit

/// A server that cannot be reached: every request fails at once.
private struct UnreachableBackend: CallBackend {
    var unreachable: SwitchboardAPIError { SwitchboardAPIError(status: 0, code: .transport, message: "unreachable") }
    func createCall(scopeKind: ScopeKind, scopeID: String, mode: CallMode, clientID: UUID) async throws -> CallInfo {
        throw unreachable
    }
    func call(_ callID: String) async throws -> CallInfo { throw unreachable }
    func perform(_ action: CallAction, onCall callID: String) async throws -> CallInfo { throw unreachable }
    func mediaToken(forCall callID: String) async throws -> MediaToken { throw unreachable }
    func eventCursor() async throws -> Int64 { throw unreachable }
    func events(after: Int64, wait: Int) async throws -> EventsPage { throw unreachable }
}

private let deviceID = UUID(uuidString: "6f1c2a9e-3b7d-4e5f-8a90-b1c2d3e4f5a6")!

private func makeReceiver(
    handler: any VoIPPushHandling = RecordingVoIPPushHandler(),
    registrar: RecordingDeviceRegistrar = RecordingDeviceRegistrar(),
    environment: PushEnvironment = .sandbox,
    registrationFailed: @escaping @Sendable (VoIPDeviceRegistrationError) -> Void = { _ in }
) -> VoIPPushReceiver {
    VoIPPushReceiver(
        handler: handler, registrar: registrar, deviceID: deviceID, environment: environment,
        registrationFailed: registrationFailed)
}

/// The registry's delegate, as PushKit would call it.
private func registryDelegate(of receiver: VoIPPushReceiver) throws -> any PKPushRegistryDelegate {
    try #require(receiver.registry.delegate, "the receiver is not the registry's delegate")
}

/// A VoIP push as the server sends it (SPEC §3).
private func callPayload() -> [AnyHashable: Any] {
    [
        "aps": [String: Any](), "callId": "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab", "scopeKind": "conversation",
        "scopeId": "conv-1", "mode": "audio", "callerName": "Ada",
    ]
}

@Suite("PushKit: registry and device token", .timeLimit(.minutes(1)))
struct VoIPTokenTests {
    @Test func theDelegateIsSetBeforeVoIPPushesAreRequested() {
        let receiver = makeReceiver()
        #expect(receiver.registry._stubAssignments == [.delegate(isNil: false), .desiredPushTypes([.voIP])])
        #expect(receiver.registry._stubQueue != nil)
    }

    @Test(arguments: PushEnvironment.known)
    func aNewTokenIsRegisteredAsHexWithTheDeviceIDAndEnvironment(_ environment: PushEnvironment) async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = makeReceiver(registrar: registrar, environment: environment)
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var calls = registrar.calls.makeAsyncIterator()
        let token = Data([0x00, 0x01, 0x7f, 0x80, 0xab, 0xff] + Array(repeating: 0x5a, count: 26))

        try registryDelegate(of: receiver).pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: token), for: .voIP)

        let expectedHex = "00017f80abff" + String(repeating: "5a", count: 26)
        #expect(await calls.next() == .register(deviceID: deviceID, pushToken: expectedHex, environment: environment))
    }

    @Test func aPayloadKeyGoesWithEveryRegistration() async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = VoIPPushReceiver(
            handler: RecordingVoIPPushHandler(), registrar: registrar, deviceID: deviceID, environment: .production,
            payloadKey: PayloadKeyRegistration(id: "phone-1", key: Data(count: 32).base64EncodedString()))
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var calls = registrar.calls.makeAsyncIterator()
        try registryDelegate(of: receiver).pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: Data(repeating: 0x11, count: 32)),
            for: .voIP)
        #expect(
            await calls.next()
                == .registerWithKey(
                    deviceID: deviceID, pushToken: String(repeating: "11", count: 32), environment: .production,
                    keyID: "phone-1"))
    }

    @Test func anInvalidatedTokenIsUnregistered() async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = makeReceiver(registrar: registrar)
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var calls = registrar.calls.makeAsyncIterator()

        try registryDelegate(of: receiver).pushRegistry(receiver.registry, didInvalidatePushTokenFor: .voIP)

        #expect(await calls.next() == .unregister(deviceID: deviceID))
    }

    @Test func onlyTheNewestWishReachesTheServer() async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = makeReceiver(registrar: registrar)
        let delegate = try registryDelegate(of: receiver)
        var calls = registrar.calls.makeAsyncIterator()
        // Three changes before the receiver runs: a stale token must never be bound again.
        delegate.pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: Data([0xaa])), for: .voIP)
        delegate.pushRegistry(receiver.registry, didInvalidatePushTokenFor: .voIP)
        delegate.pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: Data([0xbb])), for: .voIP)

        let runner = Task { await receiver.run() }
        defer { runner.cancel() }

        #expect(await calls.next() == .register(deviceID: deviceID, pushToken: "bb", environment: .sandbox))
        delegate.pushRegistry(receiver.registry, didInvalidatePushTokenFor: .voIP)
        #expect(await calls.next() == .unregister(deviceID: deviceID))  // nothing else came in between
    }

    @Test func otherPushTypesLeaveTheServerAlone() async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = makeReceiver(registrar: registrar)
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var calls = registrar.calls.makeAsyncIterator()
        let delegate = try registryDelegate(of: receiver)
        let fileProvider = PKPushType(rawValue: "PKPushTypeFileProvider")

        delegate.pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: fileProvider, token: Data([1])),
            for: fileProvider)
        delegate.pushRegistry(receiver.registry, didInvalidatePushTokenFor: fileProvider)
        delegate.pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: Data([2])), for: .voIP)

        #expect(await calls.next() == .register(deviceID: deviceID, pushToken: "02", environment: .sandbox))
    }

    @Test func registerCurrentTokenSendsTheTokenPushKitHolds() async throws {
        let registrar = RecordingDeviceRegistrar()
        let receiver = makeReceiver(registrar: registrar, environment: .production)
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var calls = registrar.calls.makeAsyncIterator()

        receiver.registry._stubSetPushToken(Data([0xde, 0xad, 0xbe, 0xef]), for: .voIP)
        receiver.registerCurrentToken()  // e.g. after a login

        #expect(await calls.next() == .register(deviceID: deviceID, pushToken: "deadbeef", environment: .production))
    }

    @Test func aFailedRegistrationIsReportedWithWhatFailed() async throws {
        let registrar = RecordingDeviceRegistrar()
        registrar.fail(true)
        let (failures, failuresInput) = AsyncStream.makeStream(of: VoIPDeviceRegistrationError.self)
        let receiver = makeReceiver(registrar: registrar, registrationFailed: { failuresInput.yield($0) })
        let runner = Task { await receiver.run() }
        defer { runner.cancel() }
        var failed = failures.makeAsyncIterator()
        let delegate = try registryDelegate(of: receiver)

        delegate.pushRegistry(
            receiver.registry, didUpdate: PKPushCredentials(_stubType: .voIP, token: Data([1])), for: .voIP)
        let registerFailure = try #require(await failed.next())
        #expect(registerFailure.operation == .register)
        #expect(registerFailure.underlying is RecordingDeviceRegistrar.Refused)

        delegate.pushRegistry(receiver.registry, didInvalidatePushTokenFor: .voIP)
        #expect(await failed.next()?.operation == .unregister)
    }
}

@Suite("PushKit: incoming pushes", .timeLimit(.minutes(3)))
struct VoIPIncomingPushTests {
    @Test func thePreIOS264PathAlwaysAsksForAReport() throws {
        let handler = RecordingVoIPPushHandler()
        let receiver = makeReceiver(handler: handler)
        let completed = Flag()

        try registryDelegate(of: receiver).pushRegistry(
            receiver.registry,
            didReceiveIncomingPushWith: PKPushPayload(_stubType: .voIP, dictionaryPayload: callPayload()),
            for: .voIP, completion: { completed.set() })

        #expect(handler.pushes == [.init(callID: "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab", mustReport: true)])
        #expect(completed.timesSet == 1)
    }

    @Test func theIOS264PathPassesMustReportFalseThrough() throws {
        let handler = RecordingVoIPPushHandler()
        let receiver = makeReceiver(handler: handler)
        let completed = Flag()

        try registryDelegate(of: receiver).pushRegistry(
            receiver.registry,
            didReceiveIncomingVoIPPushWith: PKPushPayload(_stubType: .voIP, dictionaryPayload: callPayload()),
            metadata: PKVoIPPushMetadata(_stubMustReport: false), withCompletionHandler: { completed.set() })

        #expect(handler.pushes == [.init(callID: "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab", mustReport: false)])
        #expect(completed.timesSet == 1)  // the handler skipped the report and completed
    }

    @Test func aPushOfAnotherTypeIsCompletedWithoutTheHandler() throws {
        let handler = RecordingVoIPPushHandler()
        let receiver = makeReceiver(handler: handler)
        let completed = Flag()
        let other = PKPushType(rawValue: "PKPushTypeFileProvider")

        try registryDelegate(of: receiver).pushRegistry(
            receiver.registry, didReceiveIncomingPushWith: PKPushPayload(_stubType: other, dictionaryPayload: [:]),
            for: other, completion: { completed.set() })

        #expect(handler.pushes.isEmpty)
        #expect(completed.timesSet == 1)
    }
}

extension CallKitAdapterSuite {
    @Suite("PushKit completion after the CallKit report (SPEC §4 rule 1)", .timeLimit(.minutes(3)))
    struct PushCompletionOrderTests {
        enum Path: String, CaseIterable, Sendable {
            case beforeIOS264
            case iOS264MustReport
        }

        @Test(arguments: Path.allCases)
        func pushKitsCompletionRunsOnlyAfterTheReportCompleted(_ path: Path) throws {
            try withCallSystem { system, provider, _ in
                let handler = RecordingVoIPPushHandler(reportingThrough: system)
                let receiver = makeReceiver(handler: handler)
                let completed = Flag()
                let payload = PKPushPayload(_stubType: .voIP, dictionaryPayload: callPayload())
                let delegate = try registryDelegate(of: receiver)

                switch path {
                case .beforeIOS264:
                    delegate.pushRegistry(receiver.registry, didReceiveIncomingPushWith: payload, for: .voIP) {
                        completed.set()
                    }
                case .iOS264MustReport:
                    delegate.pushRegistry(
                        receiver.registry, didReceiveIncomingVoIPPushWith: payload,
                        metadata: PKVoIPPushMetadata(_stubMustReport: true)
                    ) { completed.set() }
                }

                // Reported synchronously, from inside the PushKit callback…
                let report = try #require(provider._stubIncomingCallReports.first)
                #expect(report.uuid == CallIdentity.uuid(forCallID: "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab"))
                #expect(report.update.remoteHandle?.value == "conv-1")
                #expect(report.update.localizedCallerName == "Ada")
                #expect(handler.pushes.map(\.mustReport) == [true])
                // …and PushKit is released only once CallKit answered.
                #expect(completed.timesSet == 0)

                provider._stubCompleteIncomingCallReport(0, error: nil)
                #expect(completed.timesSet == 1)
                #expect(handler.reportErrors == [nil])
            }
        }

        /// The same order with the SDK's real `CallCoordinator` as the handler, over the adapter.
        @Test func theRealCoordinatorReleasesPushKitOnlyAfterCallKitAnswered() throws {
            try withCallSystem { system, provider, _ in
                let clock = ManualClock()
                let coordinator = CallCoordinator(
                    userID: "me", backend: UnreachableBackend(), callSystem: system,
                    media: SimulatedMedia(clock: clock).makeSession, clock: clock)
                defer { coordinator.shutdown() }
                let receiver = makeReceiver(handler: coordinator)
                let completed = Flag()
                try registryDelegate(of: receiver).pushRegistry(
                    receiver.registry,
                    didReceiveIncomingPushWith: PKPushPayload(_stubType: .voIP, dictionaryPayload: callPayload()),
                    for: .voIP, completion: { completed.set() })
                let report = try #require(
                    provider._stubIncomingCallReports.first, "reported before PushKit's callback returned")
                #expect(report.uuid == CallIdentity.uuid(forCallID: "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab"))
                #expect(completed.timesSet == 0)
                provider._stubCompleteIncomingCallReport(0, error: nil)
                #expect(completed.timesSet == 1)
                #expect(coordinator.call("8e7a2a6c-1b2c-4d3e-8f40-0123456789ab")?.system == .live)
            }
        }

        @Test func aRefusedReportStillReleasesPushKitWithTheReason() throws {
            try withCallSystem { system, provider, _ in
                let handler = RecordingVoIPPushHandler(reportingThrough: system)
                let receiver = makeReceiver(handler: handler)
                let completed = Flag()

                try registryDelegate(of: receiver).pushRegistry(
                    receiver.registry,
                    didReceiveIncomingPushWith: PKPushPayload(_stubType: .voIP, dictionaryPayload: callPayload()),
                    for: .voIP, completion: { completed.set() })
                #expect(completed.timesSet == 0)

                provider._stubCompleteIncomingCallReport(
                    0, error: NSError(domain: CXErrorCodeIncomingCallError.errorDomain, code: 3))
                #expect(completed.timesSet == 1)
                #expect(handler.reportErrors == [.incomingCall(.filteredByDoNotDisturb)])
            }
        }
    }
}

#endif
