import Foundation
import Testing
import SwitchboardTesting
@testable import SwitchboardServer

// APNs going away mid-ring and coming back, through the binaries.
extension PushLiveTests {
    /// Rings written while APNs is unreachable: those whose call is cancelled or answered before
    /// it is back never reach a phone (not even one held in the transport for the connection);
    /// the one still ringing does, once.
    @Test func aRingEndedWhileAPNsWasDownNeverReachesThePhone() async throws {
        let rig = try Rig(apnsOutages: true)
        let bobs = Self.deviceToken(0xd1), franks = Self.deviceToken(0xd2), carols = Self.deviceToken(0xd3)
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob", device: bobs)
        let erin = try await Self.person(rig, "erin"), frank = try await Self.person(rig, "frank", device: franks)
        let dave = try await Self.person(rig, "dave"), carol = try await Self.person(rig, "carol", device: carols)
        let toBob = try await Self.befriend(rig, alice, bob), toFrank = try await Self.befriend(rig, erin, frank)
        let toCarol = try await Self.befriend(rig, dave, carol)

        // The connection is up and proven, then APNs goes away under it.
        let warm = try await Self.call(rig, alice, "conversation", toBob)
        #expect(try await rig.pushes(for: bobs).count == 1)
        #expect(await fetch(rig.server.address, "POST", "/calls/\(warm)/cancel", headers: alice.auth).status == 200)
        rig.stopAPNs()

        let cancelled = try await Self.call(rig, alice, "conversation", toBob)
        let answered = try await Self.call(rig, erin, "conversation", toFrank)
        _ = try await Self.call(rig, dave, "conversation", toCarol)
        // Each of the three rings has met the outage at least once (a refused connection, or a
        // request held for one), and is waiting to be tried again.
        let retried = "switchboard_push_attempts_retried_total{provider=\"apns\",channel=\"ios-voip\"}"
        #expect(
            await eventually(seconds: 30, every: .milliseconds(200)) { await rig.metric(retried) >= 3 },
            "the rings met the outage")
        // Their retries (1 s on) meet a closed reconnect gate, whose pause grows with each
        // refused probe: they wait in the transport for the connection when the calls end.
        try await Task.sleep(for: .milliseconds(2500))
        #expect(
            await fetch(rig.server.address, "POST", "/calls/\(cancelled)/cancel", headers: alice.auth).status == 200)
        #expect(
            await fetch(rig.server.address, "POST", "/calls/\(answered)/accept", headers: frank.auth).status == 200)
        try rig.startAPNs()

        // The ring still ringing arrives once APNs is back; the two that ended never do.
        let carolsPushes = try await rig.pushes(for: carols, wait: 25)
        #expect(carolsPushes.count == 1)
        let bothDropped = try await rig.waitForOutcome { outcomes in
            outcomes.filter { $0["state"] as? String == "dropped" && $0["reason"] as? String == "call_not_ringing" }
                .reduce(0) { $0 + (($1["count"] as? Int) ?? 0) } >= 2
        }
        let outcomes = await rig.adminStatus()["outcomes"] ?? "-"
        #expect(bothDropped, "both ended rings dropped: \(outcomes)")
        #expect(try await rig.pushes(for: bobs, wait: 0).count == 1, "only the warm-up ring reached Bob")
        #expect(try await rig.pushes(for: franks, wait: 0).isEmpty, "Frank answered elsewhere: no ring")
        await rig.close()
    }
}
