import Foundation
import Testing
import SwitchboardCrypto
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardPush
import SwitchboardTesting

/// A phone's payload keys, opened with OpenSSL (CryptoKit on a real iPhone).
struct PhoneKeyring: VoIPPayloadDecrypting {
    let keys: [String: [UInt8]]

    func open(keyID: String, nonce: Data, ciphertext: Data, tag: Data) -> Data? {
        guard let key = keys[keyID] else { return nil }
        let box = AESGCM.SealedBox(nonce: Array(nonce), ciphertext: Array(ciphertext), tag: Array(tag))
        return (try? AESGCM.open(box, key: key, authenticating: Array(keyID.utf8))).map { Data($0) }
    }
}

/// A phone's push inbox: the APNs emulator's `/inbox/<token>` over HTTP/2 and TLS.
struct EmulatorInboxPushSource: PushSource {
    let inbox: HTTP2Client
    let token: String

    func pushes(after: Int, wait: Double) async throws -> (payloads: [Data], cursor: Int) {
        let response = try await inbox.send(
            HTTP2Request(method: "GET", path: "/inbox/\(token)?after=\(after)&wait=\(Int(wait))", headers: [], body: [])
        )
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        let messages = object["messages"] as? [[String: Any]] ?? []
        let payloads = try messages.compactMap { $0["payload"] }.map { try JSONSerialization.data(withJSONObject: $0) }
        return (payloads, object["cursor"] as? Int ?? after)
    }
}

/// SDK end to end through the real binaries: two simulated phones, the server, the APNs
/// emulator. The callee's app is in the background with no event feed: only the VoIP push can
/// wake it.
@Suite("SDK: two simulated phones through the server and the push path", .serialized, .timeLimit(.minutes(5)))
struct SDKTwoPhonesLiveTests {
    @Test func aBackgroundedPhoneIsWokenByPushAnswersAndBothHangUpCleanly() async throws {
        let rig = try PushLiveTests.Rig()
        let alice = try await liveRegister(rig.server.address, "alice"),
            bob = try await liveRegister(rig.server.address, "bob")
        let conversation = try await liveBefriend(rig.server.address, alice, bob)
        let base = try #require(URL(string: "http://\(rig.server.address)"))
        let token = PushLiveTests.deviceToken(0xb7)
        // These phones run on the real clock: their own deadlines (CallKit's action timeout, the
        // answer deadline, the dial timeout) are made generous so a loaded machine cannot trip
        // them; their behaviour is tested on the manual clock in SwitchboardKitTests.
        var system = SimulatedCallSystem.Configuration()
        system.actionTimeout = 4 * generousWait
        let ledger = CallLedger.Configuration(answerDeadline: 2 * generousWait, dialTimeout: 4 * generousWait)
        let alicePhone = SimulatedPhone(
            name: "alice", userID: alice.id, client: SwitchboardClient(baseURL: base, token: alice.token),
            callSystem: system, ledger: ledger)
        let bobPhone = SimulatedPhone(
            name: "bob", userID: bob.id, client: SwitchboardClient(baseURL: base, token: bob.token),
            pushSource: EmulatorInboxPushSource(inbox: rig.inbox, token: token), pushToken: token, callSystem: system,
            ledger: ledger)
        defer {
            alicePhone.shutDown()
            bobPhone.shutDown()
        }
        try await bobPhone.registerForPushes()
        bobPhone.sendToBackground()
        bobPhone.startReceivingPushes()
        await alicePhone.bringToForeground()

        let callID = try await alicePhone.dial(scopeKind: .conversation, scopeID: conversation, handle: "bob")
        #expect(await eventually { bobPhone.systemCall(callID)?.state == .ringing }, "\(bobPhone.timeline)")
        #expect(bobPhone.timeline.contains { $0.text.contains("woken by push") })
        // Alice's own call system reports the outgoing call connecting on its delegate queue; on
        // a loaded machine Bob's phone can ring first. It stays connecting until Bob answers.
        #expect(await eventually { alicePhone.systemCall(callID)?.state == .connecting }, "\(alicePhone.timeline)")

        try bobPhone.answer(callID)
        #expect(
            await eventually {
                bobPhone.systemCall(callID)?.state == .connected && alicePhone.systemCall(callID)?.state == .connected
            }, "\(alicePhone.timeline) \(bobPhone.timeline)")
        #expect(
            await eventually {
                bobPhone.media.session(callID)?.status.audioFlowing == true
                    && alicePhone.media.session(callID)?.status.audioFlowing == true
            })

        try bobPhone.hangUp(callID)
        #expect(await eventually { alicePhone.systemCall(callID)?.state == .ended }, "\(alicePhone.timeline)")
        #expect(alicePhone.systemCall(callID)?.endReason == .remoteEnded)
        // Bob's own end completes on his phone once the server has answered his leave.
        #expect(
            await eventually {
                bobPhone.systemCall(callID)?.state == .ended && bobPhone.coordinator?.call(callID)?.stage == .ended
            },
            "\(bobPhone.timeline)")
        let server = try await SwitchboardClient(baseURL: base, token: alice.token).call(callID)
        #expect(server.state == .ended && server.endReason == .completed)
        let history = try await SwitchboardClient(baseURL: base, token: bob.token).callHistory(
            scopeKind: .conversation, scopeID: conversation)
        #expect(history.map(\.id) == [callID])
        #expect(
            await eventually {
                alicePhone.media.session(callID)?.status.left == true
                    && bobPhone.media.session(callID)?.status.left == true
            })
        for phone in [alicePhone, bobPhone] {
            #expect(phone.callSystem?.violations == [], "\(phone.name)")
            #expect(phone.callSystem?.liveCalls.isEmpty == true, "\(phone.name)")
        }
        if ProcessInfo.processInfo.environment["SWITCHBOARD_PRINT_TIMELINE"] != nil {
            for entry in (alicePhone.timeline + bobPhone.timeline).sorted(by: { $0.at < $1.at }) {
                print(entry.at.timeIntervalSince1970, entry)
            }
        }
        await rig.close()
    }

    /// Encrypted VoIP payloads end to end: the server seals Bob's pushes under the key his
    /// phone registered; with the key the phone shows the caller, and with a key it lost (a
    /// reinstall) it still rings at once, as an unknown caller, learns the call from
    /// `/calls/active`, and can answer it.
    @Test(arguments: [true, false])
    func anEncryptedPushRingsThePhoneWithOrWithoutItsKey(phoneHasTheKey: Bool) async throws {
        let secret = Data(SecureRandom.bytes(32)).base64EncodedString()
        let rig = try PushLiveTests.Rig(serverSettings: ["SWITCHBOARD_DATA_ENCRYPTION_KEY": secret])
        let alice = try await liveRegister(rig.server.address, "alice"),
            bob = try await liveRegister(rig.server.address, "bob")
        let conversation = try await liveBefriend(rig.server.address, alice, bob)
        let base = try #require(URL(string: "http://\(rig.server.address)"))
        let token = PushLiveTests.deviceToken(phoneHasTheKey ? 0xc1 : 0xc2)
        let key = SecureRandom.bytes(32)
        var system = SimulatedCallSystem.Configuration()
        system.actionTimeout = 4 * generousWait
        let ledger = CallLedger.Configuration(answerDeadline: 2 * generousWait, dialTimeout: 4 * generousWait)
        let bobPhone = SimulatedPhone(
            name: "bob", userID: bob.id, client: SwitchboardClient(baseURL: base, token: bob.token),
            pushSource: EmulatorInboxPushSource(inbox: rig.inbox, token: token), pushToken: token, callSystem: system,
            ledger: ledger,
            payloadDecryptor: PhoneKeyring(keys: ["bob-1": phoneHasTheKey ? key : SecureRandom.bytes(32)]))
        defer { bobPhone.shutDown() }
        try await bobPhone.registerForPushes(
            payloadKey: PayloadKeyRegistration(id: "bob-1", key: Data(key).base64EncodedString()))
        bobPhone.sendToBackground()
        bobPhone.startReceivingPushes()
        let aliceClient = SwitchboardClient(baseURL: base, token: alice.token)
        let call = try await aliceClient.createCall(
            scopeKind: .conversation, scopeID: conversation, mode: .audio, clientID: UUID())
        // What went through "Apple": the envelope only.
        let (payloads, _) = try await EmulatorInboxPushSource(inbox: rig.inbox, token: token).pushes(after: 0, wait: 30)
        let envelope = try #require(
            try payloads.first.map { try JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? nil)
        #expect(
            envelope["enc"] as? String == "AES256-GCM" && envelope["kid"] as? String == "bob-1"
                && envelope["callId"] == nil)
        #expect(!String(decoding: try #require(payloads.first), as: UTF8.self).contains(call.id))
        // The phone rings under one UUID, named once the call is known.
        #expect(await eventually { bobPhone.coordinator?.call(call.id)?.stage == .ringing }, "\(bobPhone.timeline)")
        let uuid = try #require(bobPhone.coordinator?.call(call.id)?.uuid)
        // The report reaches the call system on its own queue, and (for a placeholder) the
        // name after the report completed.
        if phoneHasTheKey {
            #expect(uuid == CallIdentity.uuid(forCallID: call.id))
            #expect(
                await eventually { bobPhone.callSystem?.call(uuid)?.update.callerName == "alice" },
                "\(bobPhone.timeline)")
        } else {
            #expect(uuid != CallIdentity.uuid(forCallID: call.id), "reported before the call was known")
            #expect(
                await eventually { bobPhone.callSystem?.call(uuid)?.update.handle == conversation },
                "\(bobPhone.timeline)")
        }
        #expect(bobPhone.callSystem?.calls.count == 1, "one incoming-call screen")
        try bobPhone.callSystem?.userAnswers(uuid)
        #expect(await eventually { (try? await aliceClient.call(call.id))?.state == .active }, "\(bobPhone.timeline)")
        #expect(await eventually { bobPhone.callSystem?.call(uuid)?.state == .connected }, "\(bobPhone.timeline)")
        #expect(bobPhone.callSystem?.violations == [])
        await rig.close()
    }
}
