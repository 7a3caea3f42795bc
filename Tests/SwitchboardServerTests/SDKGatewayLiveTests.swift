import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardTesting

/// The app server's own call signaling, as its phone app reaches it (over the app's own
/// connection, in memory here): what the app server knows of each call it rang.
private final class AcmeSignaling: GatewayCallBackend {
    private let calls = Mutex<[String: GatewayCallState]>([:])
    private let log = Mutex<[String]>([])

    func set(_ callID: String, _ state: GatewayCallState) { calls.withLock { $0[callID] = state } }
    func current(_ callID: String) -> GatewayCallState? { calls.withLock { $0[callID] } }
    var actions: [String] { log.withLock { $0 } }

    private func move(
        _ action: String, _ call: GatewayCall, _ next: (GatewayCallState) -> GatewayCallState
    )
        -> GatewayCallState
    {
        log.withLock { $0.append("\(action):\(call.callID)") }
        return calls.withLock { calls in
            let now = next(calls[call.callID] ?? .failed)
            calls[call.callID] = now
            return now
        }
    }

    func state(of call: GatewayCall) async throws -> GatewayCallState { current(call.callID) ?? .failed }
    func answer(_ call: GatewayCall) async throws -> GatewayCallState {
        move("answer", call) { $0 == .ringing ? .answered : $0 }
    }
    func decline(_ call: GatewayCall) async throws -> GatewayCallState {
        move("decline", call) { $0 == .ringing ? .declined : $0 }
    }
    func hangUp(_ call: GatewayCall) async throws -> GatewayCallState {
        move("hangUp", call) { $0 == .answered ? .ended : $0 }
    }
    func mediaToken(for call: GatewayCall) async throws -> MediaToken {
        log.withLock { $0.append("mediaToken:\(call.callID)") }
        return MediaToken(url: "wss://media.acme.test", token: "acme-\(call.roomID)", expiresAt: "")
    }
}

/// Gateway calls with the SDK, through the real binaries: an app server signs a ring through
/// the push gateway, the APNs emulator carries the VoIP push, and the phone's coordinator (with
/// no Switchboard account, only the app's own signaling) reports, answers and ends it; a cancel
/// from the app server ends the next ring.
@Suite("SDK: gateway calls through the binaries", .serialized, .timeLimit(.minutes(5)))
struct SDKGatewayLiveTests {
    @Test func anAppServersRingIsAnsweredAndEndedAndItsCancelEndsTheNextRing() async throws {
        let rig = try PushLiveTests.Rig()
        let acme = try await GatewayAppServer(registeringOn: rig.server.address, adminKey: PushLiveTests.adminKey)
        let token = PushLiveTests.deviceToken(0xd4)
        let device = try await acme.signed(
            "POST", "/gateway/v1/devices",
            #"{"userId":"bob","deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(token)","environment":"production"}}}"#
        )
        try #require(device.status == 200, "\(device.body)")

        // Bob's phone: the simulated CallKit and media, the app's signaling, no Switchboard account.
        let clock = ManualClock()
        let system = SimulatedCallSystem(clock: clock)
        let media = SimulatedMedia(clock: clock)
        media.attach(system)
        let signaling = AcmeSignaling()
        let coordinator = CallCoordinator(
            userID: "bob", backend: GatewayOnlyBackend(), callSystem: system, media: { media.makeSession($0) },
            clock: clock, gateway: signaling)
        defer { coordinator.shutdown() }
        func settle() async {
            await clock.run(seconds: 0.5, settling: system)
            await coordinator.settle()
        }
        /// The app server rings Bob; the n-th VoIP push for his token reaches the phone.
        func ring(_ callID: String, push n: Int) async throws -> UUID {
            signaling.set(callID, .ringing)
            let signal = try await acme.signed(
                "POST", "/gateway/v1/signals",
                #"{"callId":"\#(callID)","roomId":"room-\#(callID)","type":"audio","caller":{"id":"alice","name":"Alice"},"callees":["bob"],"ext":{"data":{"ticket":"t-\#(callID)"}}}"#
            )
            try #require(signal.status == 202, "\(signal.body)")
            var messages: [[String: Any]] = []
            #expect(
                await eventually(seconds: generousWait) {
                    messages = (try? await rig.pushes(for: token, wait: 5)) ?? []
                    return messages.count >= n
                }, "push \(n) reached the phone")
            let payload = try #require(messages.last?["payload"] as? [String: Any])
            #expect(payload["scopeKind"] as? String == "gateway" && payload["callId"] as? String == callID)
            #expect(system.deliverVoIPPush(payload, to: coordinator), "reported before the handler returned")
            return CallIdentity.uuid(forCallID: callID)
        }

        // 1. Rung, answered, talked, hung up: the app server hears each step, Switchboard none.
        let first = try await ring("acme-1", push: 1)
        await settle()
        #expect(system.call(first)?.state == .ringing)
        #expect(system.call(first)?.update.callerName == "Alice")
        try system.userAnswers(first)
        #expect(
            await eventually(seconds: generousWait) {
                await settle()
                return system.call(first)?.state == .connected
            })
        #expect(signaling.current("acme-1") == .answered)
        #expect(media.session("acme-1")?.status.token == "acme-room-acme-1")
        let status = try await acme.signed("GET", "/gateway/v1/signals/acme-1")
        #expect(status.body.contains(#""delivered""#), "Switchboard delivered the ring: \(status.body)")
        try system.userEnds(first)
        #expect(
            await eventually(seconds: generousWait) {
                await settle()
                return signaling.current("acme-1") == .ended
            })
        #expect(media.session("acme-1")?.status.left == true)
        #expect(signaling.actions == ["answer:acme-1", "mediaToken:acme-1", "hangUp:acme-1"])

        // 2. Rung, then withdrawn by the app server: Switchboard's signal is cancelled, and the
        // app's signaling tells the phone, whose ring ends at once (nothing sent back).
        let second = try await ring("acme-2", push: 2)
        await settle()
        #expect(system.call(second)?.state == .ringing)
        let cancel = try await acme.signed("POST", "/gateway/v1/signals/acme-2/cancel")
        #expect(cancel.status == 200, "\(cancel.body)")
        signaling.set("acme-2", .cancelled)
        coordinator.gatewayCallChanged("acme-2", to: .cancelled)
        #expect(
            await eventually(seconds: generousWait) {
                await settle()
                return system.call(second)?.state == .ended
            })
        #expect(system.call(second)?.endReason == .remoteEnded)
        #expect(signaling.actions.count == 3, "the cancelled ring sent nothing: \(signaling.actions)")
        try system.checkContract(expectingNoCalls: true)
        await rig.close()
    }
}
