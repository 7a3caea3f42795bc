import Foundation
import Testing
import SwitchboardKit
import SwitchboardWire

@Suite("Call identity (SPEC §4 rule 2)", .timeLimit(.minutes(3)))
struct CallIdentityTests {
    @Test func aServerCallIDIsItsOwnUUIDSoPushAndEventAgree() {
        let callID = "8e7a2a6c-1b2c-4d3e-8f40-0123456789ab"
        let fromPush = CallIdentity.uuid(forCallID: callID)
        let fromEvent = CallIdentity.uuid(forCallID: callID.uppercased())
        #expect(fromPush == fromEvent)
        #expect(fromPush.uuidString.lowercased() == callID)
    }

    @Test func otherIDsGetAStableDistinctVersion8UUID() {
        let a = CallIdentity.uuid(forCallID: "call-42"), again = CallIdentity.uuid(forCallID: "call-42")
        #expect(a == again)
        #expect(a != CallIdentity.uuid(forCallID: "call-43"))
        let text = a.uuidString
        #expect(Array(text)[14] == "8")  // version
        #expect("89AB".contains(Array(text)[19]))  // RFC 4122 variant
        // No collisions among many similar ids.
        let uuids = Set((0..<10_000).map { CallIdentity.uuid(forCallID: "call-\($0)") })
        #expect(uuids.count == 10_000)
    }
}

@Suite("Query encoding in one place (SPEC §4 rule 8)", .timeLimit(.minutes(3)))
struct QueryEncodingTests {
    @Test(arguments: [
        ("+4915112345678", "%2B4915112345678"),
        ("a b&c=d", "a%20b%26c%3Dd"),
        ("ümlaut", "%C3%BCmlaut"),
        ("safe-._~AZaz09", "safe-._~AZaz09"),
        ("%2B", "%252B"),
        ("", ""),
    ])
    func encodesEverythingButUnreserved(text: String, encoded: String) {
        #expect(QueryEncoding.encode(text) == encoded)
    }

    @Test func queryKeepsOrderAndEncodesBothSides() {
        #expect(QueryEncoding.query([("phone", "+1 555"), ("a&b", "c")]) == "phone=%2B1%20555&a%26b=c")
    }
}

@Suite("Event consumer policy (SPEC §4 rule 10)", .timeLimit(.minutes(3)))
struct EventConsumerPolicyTests {
    private func event(_ id: Int64, _ kind: EventKind = .callChanged) -> Event {
        Event(id: id, kind: kind, callId: "c\(id)", createdAt: "2026-11-30T00:00:00.000Z")
    }

    @Test func pollsWithWait20FromTheSnapshotCursor() {
        var policy = EventConsumerPolicy(cursor: 41)
        #expect(policy.start() == .poll(after: 41, wait: 20, generation: 0))
    }

    @Test func theCursorAdvancesOnlyAfterTheBatchWasHandled() {
        var policy = EventConsumerPolicy(cursor: 10)
        _ = policy.start()
        let action = policy.received(
            .events(EventsPage(events: [event(11), event(12)], cursor: 12)), sentGeneration: 0, jitter: 0.5)
        #expect(action == .handle([event(11), event(12)], cursor: 12))
        #expect(policy.cursor == 10, "not yet: the app may crash while handling")
        #expect(policy.handled(through: 12) == .poll(after: 12, wait: 20, generation: 0))
        #expect(policy.cursor == 12)
    }

    @Test func anEmptyBatchPollsAgainFromTheSameCursor() {
        var policy = EventConsumerPolicy(cursor: 7)
        _ = policy.start()
        #expect(
            policy.received(.events(EventsPage(events: [], cursor: 7)), sentGeneration: 0, jitter: 0)
                == .poll(after: 7, wait: 20, generation: 0))
    }

    @Test func oldEventsNeverGoBackward() {
        var policy = EventConsumerPolicy(cursor: 20)
        _ = policy.start()
        let action = policy.received(
            .events(EventsPage(events: [event(19), event(21)], cursor: 21)), sentGeneration: 0, jitter: 0)
        #expect(action == .handle([event(21)], cursor: 21))
        _ = policy.handled(through: 21)
        #expect(policy.handled(through: 5) == .poll(after: 21, wait: 20, generation: 0))
        #expect(policy.cursor == 21)
    }

    @Test func unauthorizedEndsTheSessionAndStops() {
        var policy = EventConsumerPolicy(cursor: 3)
        _ = policy.start()
        #expect(policy.received(.unauthorized, sentGeneration: 0, jitter: 0) == .endSession)
        #expect(policy.received(.failure, sentGeneration: 0, jitter: 0) == .idle)
    }

    @Test(arguments: [(0.0, 2.5), (0.5, 3.0), (0.999999, 3.499999)])
    func otherFailuresRetryAfterAboutThreeSeconds(jitter: Double, seconds: Double) {
        var policy = EventConsumerPolicy(cursor: 3)
        _ = policy.start()
        guard
            case .retry(let delay, let after, let generation) = policy.received(
                .failure, sentGeneration: 0, jitter: jitter)
        else {
            Issue.record("expected a retry")
            return
        }
        #expect(abs(delay - seconds) < 0.000_01)
        #expect(after == 3 && generation == 0)
    }

    @Test func aResponseForAnOlderTokenIsDiscarded() {
        var policy = EventConsumerPolicy(cursor: 3)
        _ = policy.start()
        #expect(policy.tokenChanged(cursor: 50) == .poll(after: 50, wait: 20, generation: 1))
        // The old token's long poll comes back late, even with a 401: neither its events nor
        // its verdict apply to the new session.
        #expect(policy.received(.unauthorized, sentGeneration: 0, jitter: 0) == .discard)
        #expect(
            policy.received(.events(EventsPage(events: [event(4)], cursor: 4)), sentGeneration: 0, jitter: 0)
                == .discard)
        #expect(policy.cursor == 50)
    }

    @Test func anExpiredCursorAsksForASnapshotThenResumes() {
        var policy = EventConsumerPolicy(cursor: 3)
        _ = policy.start()
        #expect(policy.received(.cursorExpired, sentGeneration: 0, jitter: 0) == .resnapshot)
        #expect(policy.resume(from: 900) == .poll(after: 900, wait: 20, generation: 0))
        #expect(policy.snapshotPause == 0, "the first snapshot goes at once")
    }

    @Test func expiredCursorsInARowWaitLongerEachTimeUntilAPageIsAccepted() {
        var policy = EventConsumerPolicy(cursor: 3)
        _ = policy.start()
        var pauses: [Double] = []
        for _ in 0..<9 {
            #expect(policy.received(.cursorExpired, sentGeneration: 0, jitter: 0.5) == .resnapshot)
            pauses.append(policy.snapshotPause)
            _ = policy.resume(from: 900)
        }
        #expect(pauses == [0, 1, 2, 4, 8, 16, 30, 30, 30])
        // Jitter spreads a pause ±25 %.
        _ = policy.received(.cursorExpired, sentGeneration: 0, jitter: 0)
        #expect(policy.snapshotPause == 22.5)
        _ = policy.resume(from: 900)
        _ = policy.received(.cursorExpired, sentGeneration: 0, jitter: 1)
        #expect(policy.snapshotPause == 37.5)
        // An accepted page (even an empty one) starts the count again.
        _ = policy.resume(from: 900)
        _ = policy.received(.events(EventsPage(events: [], cursor: 900)), sentGeneration: 0, jitter: 0)
        #expect(policy.received(.cursorExpired, sentGeneration: 0, jitter: 0.5) == .resnapshot)
        #expect(policy.expiredInARow == 1 && policy.snapshotPause == 0)
    }
}
