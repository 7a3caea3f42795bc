import Foundation
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardPush
import SwitchboardTesting

/// A phone's push inbox: the APNs emulator's `/inbox/<token>` over HTTP/2 and TLS.
struct EmulatorInboxPushSource: PushSource {
    let inbox: HTTP2Client
    let token: String

    func pushes(after: Int, wait: Double) async throws -> (payloads: [Data], cursor: Int) {
        let response = try await inbox.send(HTTP2Request(method: "GET", path: "/inbox/\(token)?after=\(after)&wait=\(Int(wait))", headers: [], body: []))
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
        let alice = try await liveRegister(rig.server.address, "alice"), bob = try await liveRegister(rig.server.address, "bob")
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
            name: "alice", userID: alice.id, client: SwitchboardClient(baseURL: base, token: alice.token), callSystem: system, ledger: ledger)
        let bobPhone = SimulatedPhone(
            name: "bob", userID: bob.id, client: SwitchboardClient(baseURL: base, token: bob.token),
            pushSource: EmulatorInboxPushSource(inbox: rig.inbox, token: token), pushToken: token, callSystem: system, ledger: ledger)
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
        #expect(await eventually {
            bobPhone.systemCall(callID)?.state == .connected && alicePhone.systemCall(callID)?.state == .connected
        }, "\(alicePhone.timeline) \(bobPhone.timeline)")
        #expect(await eventually {
            bobPhone.media.session(callID)?.status.audioFlowing == true && alicePhone.media.session(callID)?.status.audioFlowing == true
        })

        try bobPhone.hangUp(callID)
        #expect(await eventually { alicePhone.systemCall(callID)?.state == .ended }, "\(alicePhone.timeline)")
        #expect(alicePhone.systemCall(callID)?.endReason == .remoteEnded)
        // Bob's own end completes on his phone once the server has answered his leave.
        #expect(await eventually { bobPhone.systemCall(callID)?.state == .ended && bobPhone.coordinator?.call(callID)?.stage == .ended },
                "\(bobPhone.timeline)")
        let server = try await SwitchboardClient(baseURL: base, token: alice.token).call(callID)
        #expect(server.state == .ended && server.endReason == .completed)
        let history = try await SwitchboardClient(baseURL: base, token: bob.token).callHistory(scopeKind: .conversation, scopeID: conversation)
        #expect(history.map(\.id) == [callID])
        #expect(await eventually {
            alicePhone.media.session(callID)?.status.left == true && bobPhone.media.session(callID)?.status.left == true
        })
        for phone in [alicePhone, bobPhone] {
            #expect(phone.callSystem?.violations == [], "\(phone.name)")
            #expect(phone.callSystem?.liveCalls.isEmpty == true, "\(phone.name)")
        }
        if ProcessInfo.processInfo.environment["SWITCHBOARD_PRINT_TIMELINE"] != nil {
            for entry in (alicePhone.timeline + bobPhone.timeline).sorted(by: { $0.at < $1.at }) { print(entry.at.timeIntervalSince1970, entry) }
        }
        await rig.close()
    }
}
