import Testing

@testable import SwitchboardPush

/// The caller ↔ loop hand-over as a pure state machine (waiters are plain strings here).
@Suite("HTTP2ClientInbox", .timeLimit(.minutes(1)))
struct HTTP2ClientInboxTests {
    typealias Inbox = HTTP2ClientInbox<String>

    @Test("only the first submission after a drain wakes the loop")
    func wakesOncePerDrain() {
        var inbox = Inbox()
        let a = inbox.reserveID()
        let b = inbox.reserveID()
        #expect(inbox.submit(id: a, waiter: "a") == .wakeLoop)
        #expect(inbox.submit(id: b, waiter: "b") == .none)
        #expect(inbox.inFlight == 2)
        let batch = inbox.drain()
        #expect(batch.submissions.map(\.waiter) == ["a", "b"])
        #expect(inbox.inFlight == 2, "owned by the loop, still in flight")
        let c = inbox.reserveID()
        #expect(inbox.submit(id: c, waiter: "c") == .wakeLoop)
        inbox.finished(ids: [a, b])
        #expect(inbox.inFlight == 1)
    }

    @Test("cancelling: before submit, while queued, while owned by the loop, after finishing")
    func cancellationAtEveryStage() {
        var inbox = Inbox()
        let early = inbox.reserveID()
        #expect(inbox.cancel(id: early) == .none)
        #expect(inbox.submit(id: early, waiter: "early") == .failCancelled("early"))

        let queued = inbox.reserveID()
        _ = inbox.submit(id: queued, waiter: "queued")
        #expect(inbox.cancel(id: queued) == .failCancelled("queued"))
        #expect(inbox.inFlight == 0)
        #expect(inbox.drain().submissions.isEmpty)

        let owned = inbox.reserveID()
        _ = inbox.submit(id: owned, waiter: "owned")
        _ = inbox.drain()
        #expect(inbox.cancel(id: owned) == .wakeLoop)
        #expect(inbox.drain().cancellations == [owned])

        inbox.finished(ids: [owned])
        #expect(inbox.cancel(id: owned) == .none)
        #expect(inbox.drain().cancellations.isEmpty)
        #expect(inbox.inFlight == 0)
    }

    @Test("shutdown fails what is queued, refuses new work and tells the loop")
    func shutdown() {
        var inbox = Inbox()
        let owned = inbox.reserveID()
        _ = inbox.submit(id: owned, waiter: "owned")
        _ = inbox.drain()
        let queued = inbox.reserveID()
        _ = inbox.submit(id: queued, waiter: "queued")
        let reservedBefore = inbox.reserveID()

        let (failed, wake) = inbox.shutDown()
        #expect(failed == ["queued"])
        #expect(!wake, "a wake-up for the queued request is already pending")
        #expect(inbox.drain().shutdown)
        #expect(inbox.submit(id: reservedBefore, waiter: "late") == .failShutdown("late"))
        #expect(inbox.shutDown().failed.isEmpty)
        #expect(inbox.inFlight == 1, "the loop still owns one; it fails it")
    }
}
