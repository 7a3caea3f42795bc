import Dispatch
import Synchronization

/// A fixed set of serial `DispatchQueue`s that run slow, blocking computations (scrypt) off
/// Swift's cooperative thread pool, so at most ``width`` of them run at once.
///
/// Each job goes to the queue with the fewest jobs queued or running; a queue runs one job at a
/// time. Queues made with `DispatchQueue(label:)` drain on libdispatch's overcommit threads, not
/// on the width-limited threads that back `DispatchQueue.global()` and the cooperative pool.
/// Jobs cannot be cancelled once submitted.
final class ScryptWorkers: Sendable {
    /// The process-wide workers used by ``PasswordHasher``'s async methods: two queues.
    static let shared = ScryptWorkers(width: 2, label: "switchboard.crypto.scrypt")

    /// How many jobs may run at the same time.
    var width: Int { queues.count }

    private let queues: [DispatchQueue]
    /// Jobs queued or running per queue, indexed like `queues`.
    private let load: Mutex<[Int]>

    init(width: Int, label: String) {
        precondition(width >= 1, "ScryptWorkers needs at least one queue")
        queues = (0..<width).map { DispatchQueue(label: "\(label).\($0)") }
        load = Mutex([Int](repeating: 0, count: width))
    }

    /// Runs `work` on one of the queues and returns its result; the calling task suspends
    /// without holding a thread.
    func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        let index = load.withLock { load in
            let index = load.indices.min { load[$0] < load[$1] }!
            load[index] += 1
            return index
        }
        return try await withCheckedThrowingContinuation { continuation in
            queues[index].async {
                let result = Result(catching: work)
                self.load.withLock { $0[index] -= 1 }
                continuation.resume(with: result)
            }
        }
    }
}
