import Foundation
import Testing
import SwitchboardTesting

extension PushLiveTests {
    /// The device breaker on the `POST /calls` path (the gateway's is in +Gateway): six friends
    /// each ring bob's phone once within a minute; five VoIP pushes reach it, the sixth ring is
    /// recorded dropped (`device_cut_off`) and never sent, and the seventh too (the breaker).
    @Test func theSixthRingToADeviceInAMinuteIsDroppedAndOpensTheBreaker() async throws {
        let rig = try Rig()
        let token = Self.deviceToken(0xb6)
        let bob = try await Self.person(rig, "bob", device: token)
        var callers: [(Person, String)] = []
        for index in 0..<7 {
            let friend = try await Self.person(rig, "friend\(index)")
            callers.append((friend, try await Self.befriend(rig, friend, bob)))
        }
        for (index, (friend, conversation)) in callers.enumerated() {
            let callID = try await Self.call(rig, friend, "conversation", conversation)
            #expect(await fetch(rig.server.address, "POST", "/calls/\(callID)/cancel", headers: friend.auth).status == 200)
            if index == 4 {
                // The first five are delivered before the sixth is tried.
                #expect(try await rig.waitForOutcome { $0.contains { $0["state"] as? String == "delivered" && ($0["count"] as? Int ?? 0) >= 5 } })
            }
        }
        let cutOff = try await rig.waitForOutcome {
            $0.contains { $0["state"] as? String == "dropped" && $0["reason"] as? String == "device_cut_off" && $0["count"] as? Int == 2 }
        }
        let outcomes = await rig.adminStatus()["outcomes"] ?? []
        #expect(cutOff, "\(outcomes)")
        let pushes = try await rig.pushes(for: token, wait: 1)
        #expect(pushes.count == 5, "the phone got \(pushes.count) VoIP pushes")
        await rig.close()
    }
}
