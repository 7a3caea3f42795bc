import Foundation
import Synchronization

/// Starts child processes one at a time from one thread that lives as long as the test process.
///
/// Foundation's `Process.run()` (swift-corelibs-foundation) adds a source to the calling
/// thread's run loop and wakes that run loop when the child exits; started from a short-lived
/// thread (`offPool`), a child that exits later would wake a run loop freed with its thread.
/// Every test target runs in the one test process, so they all launch through it.
///
/// This does not prevent the crash seen inside `Process.run()` in full runs (SIGSEGV in
/// `findMaximumOpenFromProcSelfFD`, once from a cooperative-pool thread): that one copies each
/// `/proc/self/fd` entry's whole 256-byte name past the end of readdir's buffer when the process
/// holds a few thousand descriptors. `make test` keeps the descriptor count low instead
/// (`TEST_WIDTH` in the Makefile).
public enum ProcessLauncher {
    /// A process handed to the launcher thread.
    // @unchecked Sendable: `process` and `outcome` are touched by two threads, never at once.
    // The caller writes nothing after appending the handoff under `queue`'s lock. The launcher
    // takes it under that lock, runs the process and writes `outcome`, then signals `done`. The
    // caller reads `outcome` only after `done.wait()` returns. The lock and the semaphore order
    // every access, and `done` is itself thread-safe.
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

    /// Runs `executable` with `arguments` to its end, on a thread of its own (off the
    /// cooperative pool), and returns its exit status and standard output; standard error is
    /// dropped.
    public static func output(
        of executable: String, _ arguments: [String]
    ) async throws -> (status: Int32, output: String) {
        try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try run(process)
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
