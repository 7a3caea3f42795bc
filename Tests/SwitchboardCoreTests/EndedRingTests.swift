import Foundation
import Testing
import SwitchboardWire
@testable import SwitchboardCore

@Suite("Ended rings: who gets a notice after a transition", .timeLimit(.minutes(1)))
struct EndedRingTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    static func group() -> CallRecord {
        CallStateMachine.create(
            id: "c", scopeKind: .group, scopeID: "g", mode: .audio, caller: "a", invitees: ["b", "c", "d"], busy: ["d"],
            roomName: "r",
            now: now, ringTimeout: 30
        ).call
    }

    @Test func eachWayARingEndsIsNamed() throws {
        let ringing = Self.group()
        let accepted = try #require(try CallStateMachine.accept(ringing, by: "b", now: Self.now, busyElsewhere: false))
            .call
        #expect(
            EndedRing.between(ringing, accepted) == [EndedRing(userID: "b", outcome: .accepted)],
            "c still rings; d never rang")
        #expect(EndedRing.between(ringing, accepted).first?.noticeReason == "answered_elsewhere")
        #expect(EndedRing.between(ringing, accepted).first?.byTheUser == true)
        let missed = try #require(CallStateMachine.ringTimedOut(accepted, now: Self.now.addingTimeInterval(31))).call
        #expect(EndedRing.between(accepted, missed) == [EndedRing(userID: "c", outcome: .missed)])
        let cancelled = try CallStateMachine.cancel(ringing, by: "a", now: Self.now).call
        #expect(EndedRing.between(ringing, cancelled).map(\.noticeReason) == ["cancelled", "cancelled"])
        #expect(EndedRing.between(ringing, cancelled).allSatisfy { !$0.byTheUser })
        let declined = try CallStateMachine.decline(ringing, by: "c", now: Self.now).call
        #expect(EndedRing.between(ringing, declined) == [EndedRing(userID: "c", outcome: .declined)])
        #expect(EndedRing.between(ringing, ringing).isEmpty)
    }
}
