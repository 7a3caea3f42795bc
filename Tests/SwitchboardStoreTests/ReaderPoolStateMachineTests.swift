@testable import SwitchboardStore
import Testing

@Suite("Reader pool state machine", .timeLimit(.minutes(3)))
struct ReaderPoolStateMachineTests {
    typealias Machine = ReaderPoolStateMachine<String>

    @Test("idle readers are handed out, then requests wait and are served in arrival order")
    func fifoWaiters() {
        var machine = Machine(count: 2)
        guard case .use(let a) = machine.acquireRequested(id: 1, waiter: "a", isCancelled: false),
            case .use(let b) = machine.acquireRequested(id: 2, waiter: "b", isCancelled: false)
        else {
            Issue.record("expected two idle readers")
            return
        }
        #expect(Set([a, b]) == [0, 1])
        guard case .suspend = machine.acquireRequested(id: 3, waiter: "c", isCancelled: false),
            case .suspend = machine.acquireRequested(id: 4, waiter: "d", isCancelled: false)
        else {
            Issue.record("expected waiting")
            return
        }
        guard case .resume("c", a) = machine.readerReleased(a) else {
            Issue.record("c first")
            return
        }
        guard case .resume("d", b) = machine.readerReleased(b) else {
            Issue.record("d second")
            return
        }
        guard case .none = machine.readerReleased(a) else {
            Issue.record("idle")
            return
        }
        #expect(machine.idleCount == 1)
    }

    @Test("a cancelled waiter is removed and skipped")
    func cancellation() {
        var machine = Machine(count: 1)
        _ = machine.acquireRequested(id: 1, waiter: "a", isCancelled: false)
        _ = machine.acquireRequested(id: 2, waiter: "b", isCancelled: false)
        _ = machine.acquireRequested(id: 3, waiter: "c", isCancelled: false)
        #expect(machine.waiterCancelled(id: 2) == "b")
        #expect(machine.waiterCancelled(id: 2) == nil)
        guard case .resume("c", 0) = machine.readerReleased(0) else {
            Issue.record("c after cancelled b")
            return
        }
        guard case .fail(.cancelled) = machine.acquireRequested(id: 4, waiter: "d", isCancelled: true) else {
            Issue.record("cancelled request must fail")
            return
        }
        #expect(machine.waiterCount == 0)
    }

    @Test("closing fails waiters, closes idle readers now and checked-out ones on release")
    func close() {
        var machine = Machine(count: 2)
        _ = machine.acquireRequested(id: 1, waiter: "a", isCancelled: false)
        let action = machine.closeRequested()
        #expect(action.idle.count == 1)
        #expect(action.waiters.isEmpty)
        var other = Machine(count: 1)
        _ = other.acquireRequested(id: 1, waiter: "a", isCancelled: false)
        _ = other.acquireRequested(id: 2, waiter: "b", isCancelled: false)
        #expect(other.closeRequested().waiters == ["b"])
        guard case .close(0) = other.readerReleased(0) else {
            Issue.record("close on release")
            return
        }
        guard case .fail(.closed) = other.acquireRequested(id: 3, waiter: "c", isCancelled: false) else {
            Issue.record("closed pool must refuse")
            return
        }
        #expect(other.closeRequested().waiters.isEmpty)
    }
}
