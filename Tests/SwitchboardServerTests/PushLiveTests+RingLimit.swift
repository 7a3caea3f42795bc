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
            if index < 5 {
                // Each of the first five reaches the phone before its call is cancelled (a ring
                // cancelled before it went out is dropped, which is not what this test is about).
                #expect(
                    await eventually { ((try? await rig.pushes(for: token, wait: 1)) ?? []).count == index + 1 },
                    "ring \(index + 1)")
            }
            #expect(
                await fetch(rig.server.address, "POST", "/calls/\(callID)/cancel", headers: friend.auth).status == 200)
        }
        let cutOff = try await rig.waitForOutcome {
            $0.contains {
                $0["state"] as? String == "dropped" && $0["reason"] as? String == "device_cut_off"
                    && $0["count"] as? Int == 2
            }
        }
        let outcomes = await rig.adminStatus()["outcomes"] ?? []
        #expect(cutOff, "\(outcomes)")
        let pushes = try await rig.pushes(for: token, wait: 1)
        #expect(pushes.count == 5, "the phone got \(pushes.count) VoIP pushes")
        await rig.close()
    }
}
