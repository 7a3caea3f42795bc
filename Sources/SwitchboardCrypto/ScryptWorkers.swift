import Dispatch
import Synchronization

/// A fixed number of threads that run slow, blocking computations (scrypt) off Swift's
/// cooperative thread pool, so at most ``width`` of them run at once, with a bounded wait.
///
/// Jobs wait in two lines: ``Priority/first`` (checking a password someone is typing) is
/// always taken before ``Priority/later`` (hashing a new password), so a flood of
/// registrations cannot delay a login by more than the jobs already running. Each line holds
/// at most ``waitingLimit`` jobs; one more is refused at once with ``Busy`` (the server answers
/// 503), so the queue, and what it makes callers wait, is bounded. Jobs run on libdispatch's
/// overcommit threads (queues made with `DispatchQueue(label:)`), never on the width-limited
/// threads behind `DispatchQueue.global()` and the cooperative pool. Jobs cannot be cancelled.
public final class ScryptWorkers: Sendable {
    /// Which line a job waits in.
    public enum Priority: Sendable {
        /// Before every ``later`` job: a login's check.
        case first
        /// After every waiting ``first`` job: a new password's hash.
        case later
    }

    /// The line was full: nothing ran; try again after about ``retryAfterSeconds``.
    public struct Busy: Error, Sendable, Equatable {
        /// A fair wait before trying again: the time the waiting jobs need, at least a second.
        public let retryAfterSeconds: Int
    }

    /// The process-wide workers ``PasswordHasher`` uses unless given others: two threads, 64
    /// jobs waiting per line.
    public static let shared = ScryptWorkers(width: 2, waitingLimit: 64, label: "switchboard.crypto.scrypt")

    /// How many jobs may run at the same time.
    public let width: Int
    /// How many jobs may wait in each line.
    public let waitingLimit: Int

    private struct Job {
        let run: @Sendable () -> Void
    }

    private struct State {
        /// Threads (indices into `queues`) with nothing to do.
        var idle: [Int]
        var first: [Job] = []
        var firstHead = 0
        var later: [Job] = []
        var laterHead = 0
        /// Seconds the last jobs took, for `Retry-After`.
        var lastSeconds = 0.1

        mutating func waiting(_ priority: Priority) -> Int {
            priority == .first ? first.count - firstHead : later.count - laterHead
        }

        mutating func next() -> Job? {
            if firstHead < first.count {
                defer {
                    firstHead += 1
                    if firstHead == first.count {
                        first.removeAll(keepingCapacity: true)
                        firstHead = 0
                    }
                }
                return first[firstHead]
            }
            if laterHead < later.count {
                defer {
                    laterHead += 1
                    if laterHead == later.count {
                        later.removeAll(keepingCapacity: true)
                        laterHead = 0
                    }
                }
                return later[laterHead]
            }
            return nil
        }
    }

    private let queues: [DispatchQueue]
    private let state: Mutex<State>

    /// Creates `width` worker threads whose lines each hold at most `waitingLimit` jobs.
    public init(width: Int, waitingLimit: Int = 64, label: String) {
        precondition(width >= 1, "ScryptWorkers needs at least one thread")
        precondition(waitingLimit >= 0, "a negative waiting limit")
        self.width = width
        self.waitingLimit = waitingLimit
        queues = (0..<width).map { DispatchQueue(label: "\(label).\($0)") }
        state = Mutex(State(idle: Array(0..<width)))
    }

    /// Jobs waiting (not running) in each line now.
    public var waiting: (first: Int, later: Int) {
        state.withLock { ($0.waiting(.first), $0.waiting(.later)) }
    }

    /// Runs `work` on one of the threads and returns its result; the calling task suspends
    /// without holding a thread. Throws ``Busy`` at once when `priority`'s line is full.
    public func run<Value: Sendable>(
        _ priority: Priority = .first, _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            let job = Job { continuation.resume(with: Result(catching: work)) }
            let decision = state.withLock { state -> Result<Int?, Busy> in
                if let worker = state.idle.popLast() { return .success(worker) }
                let waiting = state.waiting(priority)
                guard waiting < waitingLimit else {
                    // The jobs ahead of a retry: this line's and, for a later job, the first line's.
                    let ahead = waiting + (priority == .later ? state.waiting(.first) : 0)
                    let seconds = Double(ahead + width) * state.lastSeconds / Double(width)
                    return .failure(Busy(retryAfterSeconds: max(1, Int(seconds.rounded(.up)))))
                }
                if priority == .first { state.first.append(job) } else { state.later.append(job) }
                return .success(nil)
            }
            switch decision {
            case .failure(let busy): continuation.resume(throwing: busy)
            case .success(nil): break  // a worker that finishes takes it
            case .success(let worker?): queues[worker].async { self.drain(starting: job, on: worker) }
            }
        }
    }

    /// Runs `job`, then every job waiting, first line first, until none is left.
    private func drain(starting job: Job, on worker: Int) {
        var job = job
        while true {
            let started = DispatchTime.now().uptimeNanoseconds
            job.run()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let next = state.withLock { state -> Job? in
                state.lastSeconds = 0.8 * state.lastSeconds + 0.2 * seconds
                if let next = state.next() { return next }
                state.idle.append(worker)
                return nil
            }
            guard let next else { return }
            job = next
        }
    }
}
