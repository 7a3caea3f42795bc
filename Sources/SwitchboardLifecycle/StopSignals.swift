import Foundation
import Glibc
import Synchronization
import SwitchboardPOSIX

/// Process-wide delivery of stop signals to the service groups that wait for them.
///
/// A `sigaction` handler (installed the moment a group starts, so no signal that comes after
/// can take its default action) writes the signal's number into a pipe; one reader thread
/// hands each number to every group subscribed to it. Writing to a pipe is async-signal-safe;
/// nothing else happens in the handler. When the last subscriber of a signal leaves, its
/// default action is restored.
final class StopSignals: Sendable {
    static let shared = StopSignals()

    private struct State {
        var pipe: (read: Int32, write: Int32)?
        var subscribers: [Int: (signals: Set<Int32>, deliver: @Sendable (Int32) -> Void)] = [:]
        var nextID = 0
        var installed: [Int32: Int] = [:]  // signal -> subscriber count
    }

    private let state = Mutex(State())

    /// Subscribes `deliver` to `signals`; returns the id to unsubscribe with. Throws when the
    /// handler's pipe cannot be made (then no handler is installed).
    func subscribe(
        _ signals: [Int32], deliver: @escaping @Sendable (Int32) -> Void
    ) throws(ServiceGroup.StopSignalsUnavailable) -> Int {
        try state.withLock { (state) throws(ServiceGroup.StopSignalsUnavailable) -> Int in
            if state.pipe == nil {
                var fds: [Int32] = [0, 0]
                guard pipe(&fds) == 0 else { throw ServiceGroup.StopSignalsUnavailable(errno: errno) }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                state.pipe = (fds[0], fds[1])
                stopSignalPipeWriteEnd.store(fds[1], ordering: .releasing)
                let reader = fds[0]
                let thread = Thread { StopSignals.shared.readLoop(reader) }
                thread.start()
            }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = (Set(signals), deliver)
            for number in Set(signals) {
                state.installed[number, default: 0] += 1
                if state.installed[number] == 1 { Self.install(number, handler: stopSignalHandler) }
            }
            // A process can start with these signals blocked (a parent's mask is inherited
            // through fork and exec; libdispatch's threads block nearly all): a blocked signal
            // would stay pending for ever. The reader thread, which lives as long as the process,
            // unblocks the handled signals for itself (byte 0 tells it to look again); a signal
            // pending until then is delivered the moment it unblocks.
            Self.refresh(state)
            return id
        }
    }

    func unsubscribe(_ id: Int) {
        state.withLock { state in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return }
            for number in subscriber.signals {
                state.installed[number, default: 1] -= 1
                if state.installed[number] == 0 {
                    state.installed[number] = nil
                    Self.install(number, handler: nil)
                }
            }
            // The reader blocks again what it unblocked and nobody handles now.
            Self.refresh(state)
        }
    }

    /// Tells the reader thread to bring its signal mask in line with the handled signals.
    private static func refresh(_ state: State) {
        guard let write = state.pipe?.write else { return }
        var byte: UInt8 = 0
        _ = Glibc.write(write, &byte, 1)
    }

    /// Blocks or unblocks `signals` in the calling thread.
    private static func mask(_ how: Int32, _ signals: Set<Int32>) {
        guard !signals.isEmpty else { return }
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(how, &set, nil)
    }

    private static func install(_ number: Int32, handler: (@convention(c) (Int32) -> Void)?) {
        var action = sigaction()
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        if let handler {
            action.__sigaction_handler.sa_handler = handler
        } else {
            action.__sigaction_handler.sa_handler = SIG_DFL
        }
        sigaction(number, &action, nil)
    }

    private func readLoop(_ fd: Int32) {
        nameCurrentThread("sb-stop-signals")
        var byte: UInt8 = 0
        // The mask this thread was born with, and what it unblocked of it for the handlers.
        var born = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &born)
        var unblocked = Set<Int32>()
        while true {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return }
            let number = Int32(byte)
            if number == 0 {
                let handled = Set(state.withLock { state in state.installed.keys })
                let newlyHandled = handled.subtracting(unblocked).filter { sigismember(&born, $0) == 1 }
                let released = unblocked.subtracting(handled)
                Self.mask(SIG_UNBLOCK, newlyHandled)
                Self.mask(SIG_BLOCK, released)
                unblocked = unblocked.union(newlyHandled).subtracting(released)
                continue
            }
            let targets = state.withLock { state in
                state.subscribers.values.filter { $0.signals.contains(number) }.map(\.deliver)
            }
            for deliver in targets { deliver(number) }
        }
    }
}

/// The pipe the handler writes to (-1 until the first subscription).
private let stopSignalPipeWriteEnd = Atomic<Int32>(-1)

/// The handler: one byte, the signal's number, into the pipe; async-signal-safe.
private func stopSignalHandler(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(stopSignalPipeWriteEnd.load(ordering: .acquiring), &byte, 1)
    errno = saved
}
