import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire

/// The device's keys, opened with OpenSSL as CryptoKit would on the phone.
private struct KeyringDecryptor: VoIPPayloadDecrypting {
    let keys: [String: [UInt8]]

    func open(keyID: String, nonce: Data, ciphertext: Data, tag: Data) -> Data? {
        guard let key = keys[keyID] else { return nil }
        let box = AESGCM.SealedBox(nonce: Array(nonce), ciphertext: Array(ciphertext), tag: Array(tag))
        return (try? AESGCM.open(box, key: key, authenticating: Array(keyID.utf8))).map { Data($0) }
    }
}

/// Encrypted VoIP payloads on the device (SPEC §3, §4 rule 1): opened before the report; one
/// that cannot be opened still rings at once, as an unknown caller, and is resolved from the
/// server into the call it was for.
@Suite("Encrypted VoIP pushes in the coordinator", .timeLimit(.minutes(2)))
struct EncryptedPushTests {
    final class Rig: Sendable {
        let clock = ManualClock()
        let backend = InMemoryCallBackend()
        let device = SimulatedDevice()
        let system: SimulatedCallSystem
        let media: SimulatedMedia
        let coordinator: CallCoordinator
        let key = SecureRandom.bytes(32)

        init(decrypts: Bool = true) {
            system = SimulatedCallSystem(
                device: device, clock: clock, configuration: SimulatedCallSystem.Configuration())
            media = SimulatedMedia(clock: clock)
            media.attach(system)
            let media = self.media
            coordinator = CallCoordinator(
                userID: backend.me, backend: backend, callSystem: system, media: { media.makeSession($0) },
                clock: clock,
                payloadDecryptor: decrypts ? KeyringDecryptor(keys: ["k1": key]) : nil)
        }

        deinit { coordinator.shutdown() }

        func run(seconds: Double) async { await clock.run(seconds: seconds, step: 0.1, settling: system) }

        /// The push the server sends a device with payload key `k1` (or `keyID`, sealed under `key`).
        func sealedPush(for call: CallInfo, keyID: String = "k1", key: [UInt8]? = nil) throws -> [String: Any] {
            let inner = try JSONSerialization.data(withJSONObject: backend.push(for: call), options: [.sortedKeys])
            let box = try AESGCM.seal(Array(inner), key: key ?? self.key, authenticating: Array(keyID.utf8))
            return [
                "aps": [String: Any](), "v": 1, "enc": "AES256-GCM", "kid": keyID,
                "nonce": Data(box.nonce).base64EncodedString(),
                "ct": Data(box.ciphertext).base64EncodedString(), "tag": Data(box.tag).base64EncodedString(),
            ]
        }

        func push(_ payload: [String: Any]) -> Bool { system.deliverVoIPPush(payload, to: coordinator) }
    }

    @Test func anEncryptedPushIsOpenedAndReportedAsTheCallItIs() async throws {
        let rig = Rig()
        let call = rig.backend.ring(from: "alice")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        let shown = try #require(rig.system.call(CallIdentity.uuid(forCallID: call.id)))
        #expect(shown.state == .ringing && shown.update.callerName == "alice")
        #expect(!rig.backend.requests.contains("active"), "nothing to resolve")
    }

    @Test func aPushWithAnUnknownKeyRingsAsAnUnknownCallerAndIsResolvedIntoItsCall() async throws {
        let rig = Rig()
        let call = rig.backend.ring(from: "alice")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call, keyID: "rotated-away", key: SecureRandom.bytes(32))))
        await rig.run(seconds: 0.3)
        // Reported within the handler (rule 1), before the server said anything.
        #expect(rig.system.violations.isEmpty && !rig.system.killed, "\(rig.system.violations)")
        let placeholder = try #require(rig.system.calls.first)
        #expect(rig.system.calls.count == 1 && placeholder.state == .ringing && placeholder.update.handle == "unknown")
        rig.backend.release("active")
        await rig.run(seconds: 0.5)
        let entry = try #require(rig.coordinator.call(call.id))
        #expect(entry.uuid == placeholder.uuid, "the call keeps the UUID the call system knows")
        #expect(rig.system.call(placeholder.uuid)?.update.handle == call.scopeId)
        #expect(rig.system.calls.count == 1, "one incoming-call screen")
        // Answering it answers the real call.
        try rig.system.userAnswers(placeholder.uuid)
        await rig.run(seconds: 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.info(call.id)?.state == .active)
        #expect(rig.system.call(placeholder.uuid)?.state == .connected)
    }

    @Test func withoutADecryptorTheAnswerWaitsForTheResolution() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "bob")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        let placeholder = try #require(rig.system.calls.first)
        try rig.system.userAnswers(placeholder.uuid)
        await rig.run(seconds: 0.3)
        #expect(rig.backend.info(call.id)?.state == .ringing, "no accept before the call is known")
        rig.backend.release("active")
        await rig.run(seconds: 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.info(call.id)?.state == .active)
    }

    @Test func theEventStreamCanNameTheCallFirst() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "carol")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        let placeholder = try #require(rig.system.calls.first)
        // The foreground app's feed reads the call before /calls/active answers.
        await rig.coordinator.handle(events: [
            Event(id: 1, kind: EventKind.callChanged, callId: call.id, createdAt: "2026-11-30T00:00:00.000Z")
        ])
        await rig.run(seconds: 0.3)
        #expect(rig.system.calls.count == 1, "the feed's read took the placeholder: no second screen")
        #expect(rig.coordinator.call(call.id)?.uuid == placeholder.uuid)
        rig.backend.release("active")
        await rig.run(seconds: 0.5)
        #expect(rig.system.calls.count == 1 && rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.system.call(placeholder.uuid)?.state == .ringing)
    }

    @Test func aPlaceholderNothingRingsForEndsAsFailed() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "dave")
        rig.backend.endCall(call.id, reason: .cancelled)
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.system.calls.count == 1 && rig.system.liveCalls.isEmpty)
        #expect(rig.system.calls.first?.endReason == .failed)
    }

    @Test func aPlaceholderTheUserDeclinedDeclinesItsCallOnceKnown() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "erin")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        let placeholder = try #require(rig.system.calls.first)
        try rig.system.userEnds(placeholder.uuid)
        await rig.run(seconds: 0.3)
        #expect(rig.system.liveCalls.isEmpty)
        rig.backend.release("active")
        await rig.run(seconds: 1)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.backend.info(call.id)?.state == .ended, "declined on the server")
        #expect(!rig.backend.requests.contains { $0.contains("placeholder") })
    }

    @Test func aTransientFailureIsRetriedBeforeThePlaceholderGivesUp() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "frank")
        rig.backend.fail("active", status: 503, code: "UNAVAILABLE", times: 2)
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 5)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(rig.coordinator.call(call.id) != nil, "resolved on the third read")
        #expect(rig.backend.requests.filter { $0 == "active" }.count == 3)
    }

    @Test func anAnswerOnAPlaceholderWhoseCallIsGoneIsFailedNotLeftPending() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "gina")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        let placeholder = try #require(rig.system.calls.first)
        try rig.system.userAnswers(placeholder.uuid)
        rig.backend.endCall(call.id, reason: .cancelled)
        rig.backend.release("active")
        await rig.run(seconds: 20)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        #expect(
            !rig.system.log.contains { $0.text.hasPrefix("timed out") },
            "the answer action was completed, not left to time out")
        #expect(rig.system.liveCalls.isEmpty && rig.system.calls.first?.endReason == .failed)
    }

    @Test func anAnswerThatWaitsPastTheDeadlineFailsAndTheCallIsDeclinedOnceNamed() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "hank")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        let placeholder = try #require(rig.system.calls.first)
        try rig.system.userAnswers(placeholder.uuid)
        await rig.run(seconds: 11)
        #expect(rig.system.liveCalls.isEmpty, "failed at the answer deadline (rule 5)")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
        rig.backend.release("active")
        await rig.run(seconds: 1)
        #expect(rig.backend.info(call.id)?.state == .ended, "declined on the server once named")
    }

    @Test func aDeclineBeforeTheCallIsNamedSurvivesAFailedRead() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "ivy")
        rig.backend.hold("active")
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.3)
        try rig.system.userEnds(try #require(rig.system.calls.first).uuid)
        await rig.run(seconds: 0.3)
        rig.backend.fail("active", status: 503, code: "UNAVAILABLE", times: 1)
        rig.backend.release("active")
        await rig.run(seconds: 3)
        #expect(rig.backend.info(call.id)?.state == .ended, "declined after the retried read")
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func anUnreadablePushForACallTheFeedAlreadyShowsIsReportedUnderItsUUID() async throws {
        let rig = Rig(decrypts: false)
        let call = rig.backend.ring(from: "jay")
        await rig.coordinator.handle(events: [
            Event(id: 1, kind: EventKind.callChanged, callId: call.id, createdAt: "2026-11-30T00:00:00.000Z")
        ])
        await rig.run(seconds: 0.3)
        #expect(rig.system.liveCalls.map(\.uuid) == [CallIdentity.uuid(forCallID: call.id)])
        #expect(rig.push(try rig.sealedPush(for: call)))
        await rig.run(seconds: 0.5)
        #expect(rig.system.violations.isEmpty && !rig.system.killed, "\(rig.system.violations)")
        #expect(rig.system.calls.count == 1, "one incoming-call screen")
        #expect(rig.system.liveCalls.map(\.uuid) == [CallIdentity.uuid(forCallID: call.id)])
    }

    @Test func envelopesThatCannotBeOpenedAreRecognised() {
        let decryptor = KeyringDecryptor(keys: ["k1": SecureRandom.bytes(32)])
        #expect(EncryptedVoIPPush.isEncrypted(["enc": "AES256-GCM"]))
        #expect(!EncryptedVoIPPush.isEncrypted(["callId": "c1"]))
        #expect(
            EncryptedVoIPPush.open(
                ["v": 2, "enc": "AES256-GCM", "kid": "k1", "nonce": "", "ct": "", "tag": ""], with: decryptor) == nil)
        #expect(
            EncryptedVoIPPush.open(
                ["v": 1, "enc": "AES256-GCM", "kid": "k1", "nonce": "AAAA", "ct": "", "tag": "AAAA"], with: decryptor)
                == nil)
        #expect(EncryptedVoIPPush.open(["v": 1, "enc": "AES256-GCM"], with: nil) == nil)
    }
}
