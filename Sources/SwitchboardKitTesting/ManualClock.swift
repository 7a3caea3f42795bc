import Foundation
import SwitchboardKit

/// A clock that moves only when told to: scheduled work runs, in time order, inside
/// `advance(by:)`. For tests and demos that must not wait on wall time.
public final class ManualClock: CallClock {
    private struct Timer {
        let due: Double
        let order: Int
        let work: @Sendable () -> Void
        var id: UUID?
    }

    private struct State {
        var elapsed = 0.0
        var timers: [Timer] = []
        var order = 0
    }

    private let start: Date
    private let state = LockedState(State())

    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.start = start
    }

    /// Seconds since the clock was made.
    public var elapsed: Double { state.withLock { $0.elapsed } }

    public var now: Date { start.addingTimeInterval(elapsed) }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let seconds = delay.inSeconds
        state.withLock { state in
            state.order += 1
            state.timers.append(Timer(due: state.elapsed + max(seconds, 0), order: state.order, work: work))
        }
    }

    /// Returns when the clock has been advanced by `duration`, or at once (throwing
    /// `CancellationError`) when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        let seconds = duration.inSeconds
        let id = UUID()
        let wake = OneShot<Void>()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                wake.arm(continuation)
                state.withLock { state in
                    state.order += 1
                    state.timers.append(
                        Timer(
                            due: state.elapsed + max(seconds, 0), order: state.order,
                            work: { wake.resume(.success(())) }, id: id))
                }
            }
        } onCancel: {
            state.withLock { $0.timers.removeAll { $0.id == id } }
            wake.resume(.failure(CancellationError()))
        }
    }

    /// Moves time forward, running each timer that falls due at its own time.
    public func advance(by seconds: Double) {
        let target = elapsed + seconds
        while true {
            let next = state.withLock { state -> Timer? in
                guard
                    let index = state.timers.indices.min(by: {
                        (state.timers[$0].due, state.timers[$0].order) < (state.timers[$1].due, state.timers[$1].order)
                    }), state.timers[index].due <= target
                else { return nil }
                let timer = state.timers.remove(at: index)
                state.elapsed = max(state.elapsed, timer.due)
                return timer
            }
            guard let next else { break }
            next.work()
        }
        state.withLock { $0.elapsed = max($0.elapsed, target) }
    }

    /// Timers not yet due.
    public var pendingTimers: Int { state.withLock { $0.timers.count } }
}

extension SimulatedCallSystem {
    /// Lets delegate callbacks and the in-memory work they start run until nothing moves (five
    /// quiet passes in a row): for tests on a manual clock, where nothing waits on time.
    public func settle() async {
        var quiet = 0
        while quiet < 5 {
            await drain()
            try? await Task.sleep(nanoseconds: 1_000_000)
            quiet = pendingCallbacks == 0 ? quiet + 1 : 0
        }
    }
}

extension ManualClock {
    /// Moves time forward `seconds` in steps of `step`, letting `system` settle before and after
    /// each step, so timers and the work they start interleave as they would in real time.
    public func run(seconds: Double, step: Double = 0.1, settling system: SimulatedCallSystem) async {
        await system.settle()
        var left = seconds
        while left > 1e-9 {
            advance(by: min(step, left))
            left -= step
            await system.settle()
        }
    }
}
