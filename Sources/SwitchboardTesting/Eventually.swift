import Foundation

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
