#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("LockedState needs os_unfair_lock (Apple platforms) or pthread_mutex_t")
#endif

/// State that several threads share, readable and writable only while holding its own lock.
///
/// The SDK's stand-in for `Synchronization.Mutex`, which needs iOS 18 and macOS 15, so that
/// the SDK runs on iOS 16 and macOS 13. Compute under the lock, act outside it:
///
/// ```swift
/// private let state = LockedState(State())
/// let effects = state.withLock { decide(&$0.ledger) }
/// perform(effects)
/// ```
///
/// On Apple platforms the lock is an `os_unfair_lock`, on Linux a `pthread_mutex_t` of type
/// `PTHREAD_MUTEX_ERRORCHECK`. Neither is recursive, and taking the lock again on the thread
/// that holds it stops the process on both (libplatform aborts with "Trying to recursively lock
/// an os_unfair_lock"; here `pthread_mutex_lock` answers `EDEADLK` and a precondition fails), so
/// a re-entrant `withLock` fails the same way in the tests on Linux as on a phone.
/// Distinct `LockedState`s can be nested, as long as every thread takes them in one order.
package final class LockedState<State> {
    #if canImport(Darwin)
    private typealias Primitive = os_unfair_lock
    #else
    private typealias Primitive = pthread_mutex_t
    #endif

    /// The lock, at one heap address from `init` to `deinit`. Both primitives must never move
    /// or be copied while in use, and Swift guarantees neither for a stored property (`&property`
    /// may hand C a temporary copy), so the lock lives in memory of its own.
    private let primitive: UnsafeMutablePointer<Primitive>

    /// Read and written only inside `withLock`, between `lock()` and `unlock()`.
    private var state: State

    /// Creates the lock guarding `initialState`.
    package init(_ initialState: State) {
        primitive = UnsafeMutablePointer<Primitive>.allocate(capacity: 1)
        #if canImport(Darwin)
        primitive.initialize(to: os_unfair_lock())
        #else
        primitive.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let code = pthread_mutex_init(primitive, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(code == 0, "pthread_mutex_init failed with error \(code)")
        #endif
        state = initialState
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(primitive)
        #endif
        primitive.deinitialize(count: 1)
        primitive.deallocate()
    }

    /// Runs `body` with exclusive access to the state and returns what it returns.
    ///
    /// Keep `body` short and free of callbacks, awaits and other work that could take this
    /// lock again: it holds the lock throughout.
    package func withLock<Returned, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Returned
    ) throws(Failure) -> Returned {
        lock()
        defer { unlock() }
        return try body(&state)
    }

    private func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(primitive)
        #else
        let code = pthread_mutex_lock(primitive)
        precondition(code != EDEADLK, "LockedState.withLock re-entered on the thread that holds the lock")
        precondition(code == 0, "pthread_mutex_lock failed with error \(code)")
        #endif
    }

    private func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(primitive)
        #else
        let code = pthread_mutex_unlock(primitive)
        precondition(code == 0, "pthread_mutex_unlock failed with error \(code)")
        #endif
    }
}

// @unchecked Sendable, proof: the only mutable storage is `state`, and it is touched only inside
// `withLock`, after `lock()` and before `unlock()`, so at most one thread uses it at a time; the
// lock's acquire and release order memory, so each holder sees every write of the one before.
// `primitive` is a `let` whose memory neither moves nor is freed before `deinit`. `State` must
// be Sendable because values do cross threads here: one thread stores what another reads.
extension LockedState: @unchecked Sendable where State: Sendable {}
