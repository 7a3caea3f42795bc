import Foundation
import Synchronization

/// Starts child processes from one thread that lives as long as the test process.
///
/// Foundation's `Process.run()` (swift-corelibs-foundation) adds a source to the calling
/// thread's run loop and wakes that run loop when the child exits. Started from a short-lived
/// thread (`offPool`), a child that exits later would wake a run loop freed with its thread:
/// once servers were launched that way, a full test run crashed with a bad pointer inside
/// `Process.run()`. One long-lived launcher thread keeps every such run loop alive, and also
/// keeps launches from racing each other.
/// Every test target runs in the one test process, so they all launch through it.
public enum ProcessLauncher {
    /// A process handed to the launcher thread. Safe to send: the caller blocks until the
    /// launcher is done with it, so the two threads never touch it at the same time.
    private final class Handoff: @unchecked Sendable {
        let process: Process
        var outcome: Result<Void, any Error> = .success(())
        let done = DispatchSemaphore(value: 0)
        init(_ process: Process) { self.process = process }
    }

    private static let queue = Mutex<[Handoff]>([])
    private static let pending = DispatchSemaphore(value: 0)
    private static let thread: Void = {
        Thread.detachNewThread {
            while true {
                pending.wait()
                guard let handoff = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                handoff.outcome = Result { try handoff.process.run() }
                handoff.done.signal()
            }
        }
    }()

    /// Runs `process.run()` on the launcher thread and returns (or throws) what it did.
    public static func run(_ process: Process) throws {
        _ = thread
        let handoff = Handoff(process)
        queue.withLock { $0.append(handoff) }
        pending.signal()
        handoff.done.wait()
        try handoff.outcome.get()
    }
}
