import Foundation
import Synchronization

/// How long live tests wait for something that normally happens within milliseconds: a bound
/// for a hung or broken system, never a timing assertion. A loaded two-core machine (parallel
/// tests, other builds) can stall a process for seconds; the bound is generous so that only a
/// real failure reaches it.
public let generousWait: Double = 60

/// Polls `condition` every `interval` until it holds, the `seconds` bound passes, or the task is
/// cancelled (a test's time limit); returns whether it held. Use it instead of a fixed sleep
/// before an assertion:
///
/// ```swift
/// #expect(await eventually { server.openConnectionCount == 0 })
/// ```
public func eventually(
    seconds: Double = generousWait, every interval: Duration = .milliseconds(10), _ condition: () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if await condition() { return true }
        // A cancelled sleep returns at once; the loop condition then ends the wait instead of
        // spinning on the condition until the deadline.
        try? await Task.sleep(for: interval)
    }
    return await condition()
}

/// ``eventually(seconds:every:_:)`` for a condition that can throw (a database read): an error
/// ends the wait and is rethrown.
public func eventuallyTrying(
    seconds: Double = generousWait, every interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// A task's result waited for no longer than `seconds`, or until the waiting task is
/// cancelled (a test's time limit). `await task.value` on a task that never ends keeps the
/// whole test run waiting for ever, long after the test's time limit was reported; this gives
/// up instead, cancels `task` and throws ``WaitBoundPassed``.
public func value<Success: Sendable>(
    of task: Task<Success, any Error>, within seconds: Double = generousWait
) async throws -> Success {
    try await firstOf(task, within: seconds).get()
}

/// ``value(of:within:)`` for a task that cannot fail.
public func value<Success: Sendable>(
    of task: Task<Success, Never>, within seconds: Double = generousWait
) async throws -> Success {
    let wrapped = Task<Success, any Error> { await task.value }
    do {
        return try await firstOf(wrapped, within: seconds).get()
    } catch {
        task.cancel()
        throw error
    }
}

/// The bound of ``value(of:within:)`` passed before the task ended.
public struct WaitBoundPassed: Error, CustomStringConvertible {
    public let seconds: Double
    public var description: String { "the task did not end within \(seconds) s" }
}

private func firstOf<Success: Sendable>(
    _ task: Task<Success, any Error>, within seconds: Double
) async throws -> Result<Success, any Error> {
    // Neither side is a child task: a task group would wait for a child that never ends.
    let once = Mutex<CheckedContinuation<Result<Success, any Error>, Never>?>(nil)
    let finish: @Sendable (Result<Success, any Error>) -> Void = { result in
        once.withLock { continuation in
            continuation?.resume(returning: result)
            continuation = nil
        }
    }
    let bound = Mutex<Task<Void, Never>?>(nil)
    let result = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            once.withLock { $0 = continuation }
            Task { finish(await task.result) }
            bound.withLock {
                $0 = Task {
                    try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                    if !Task.isCancelled { finish(.failure(WaitBoundPassed(seconds: seconds))) }
                }
            }
            if Task.isCancelled { finish(.failure(CancellationError())) }
        }
    } onCancel: {
        finish(.failure(CancellationError()))
    }
    bound.withLock { $0?.cancel() }
    if case .failure = result { task.cancel() }
    return result
}
