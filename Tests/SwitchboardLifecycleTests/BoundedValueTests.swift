import Testing
import SwitchboardTesting

/// `value(of:within:)`: a test's wait on a task that never ends gives up instead of holding
/// the run for ever.
@Suite("Bounded task waits", .timeLimit(.minutes(1)))
struct BoundedValueTests {
    @Test func aTaskThatEndsGivesItsValue() async throws {
        let task = Task<Int, any Error> { 7 }
        #expect(try await value(of: task, within: 30) == 7)
    }

    @Test func aTaskThatFailsGivesItsError() async {
        struct Boom: Error {}
        let task = Task<Int, any Error> { throw Boom() }
        await #expect(throws: Boom.self) { try await value(of: task, within: 30) }
    }

    /// The task waits on something nothing ever resumes, and ignores cancellation.
    @Test func aTaskThatNeverEndsIsGivenUpOnAndCancelled() async throws {
        let stuck = Task<Int, Never> {
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            return 1
        }
        await #expect(throws: WaitBoundPassed.self) { try await value(of: stuck, within: 0.05) }
        #expect(stuck.isCancelled)
    }

    @Test func cancellingTheWaiterEndsTheWait() async throws {
        let stuck = Task<Int, any Error> {
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            return 1
        }
        let waiter = Task { try await value(of: stuck, within: 600) }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(stuck.isCancelled)
    }
}
