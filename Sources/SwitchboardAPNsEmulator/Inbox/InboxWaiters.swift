import Dispatch
import Foundation
import Synchronization

/// In-process readers waiting for a token's inbox to grow (the HTTP long polls have their own
/// waiters on the loop thread). The loop rings a token after each push it delivers.
final class InboxWaiters: Sendable {
    private let waiters = Mutex<[String: [UUID: CheckedContinuation<Void, Never>]]>([:])

    /// Wakes everyone waiting on `token` (lower-case).
    func ring(token: String) {
        let woken = waiters.withLock { $0.removeValue(forKey: token) ?? [:] }
        for continuation in woken.values { continuation.resume() }
    }

    /// Returns when `token` rings, after `seconds`, on cancellation, or at once when `ready()`
    /// already holds once the waiter is registered (so no delivery is missed in between).
    func wait(token: String, seconds: Double, ready: @Sendable () -> Bool) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                waiters.withLock { $0[token, default: [:]][id] = continuation }
                if ready() || Task.isCancelled { resume(token, id) }
                DispatchQueue.global().asyncAfter(deadline: .now() + max(seconds, 0)) { [self] in resume(token, id) }
            }
        } onCancel: {
            resume(token, id)
        }
    }

    private func resume(_ token: String, _ id: UUID) {
        waiters.withLock { $0[token]?.removeValue(forKey: id) }?.resume()
    }
}
