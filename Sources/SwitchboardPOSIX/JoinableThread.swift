import Glibc
import Synchronization

/// A POSIX thread that can be joined, unlike Foundation's `Thread`: a `stop()` built on it
/// returns only after every thread it started has ended. With a name, the thread names itself
/// for `top -H` and `/proc/…/comm`.
///
/// ```swift
/// let acceptor = try JoinableThread(name: "sb-proxy-accept") { core.acceptLoop() }
/// …
/// acceptor.join()
/// ```
public final class JoinableThread: Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private let handle: pthread_t
    private let joined = Atomic(false)

    /// Starts `body` on a new thread; throws when `pthread_create` fails.
    public init(name: String? = nil, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        let context = Unmanaged.passRetained(
            Body {
                if let name { nameCurrentThread(name) }
                body()
            }
        ).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(
            &handle, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
                return nil
            }, context)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SystemCallError(call: "pthread_create", errno: status)
        }
        self.handle = handle
    }

    /// Waits for the thread to end; later calls return at once.
    public func join() {
        if !joined.exchange(true, ordering: .acquiringAndReleasing) { pthread_join(handle, nil) }
    }
}
