import Foundation
import Synchronization

/// A synchronous tool's wait for a stop signal (the proxy, the APNs emulator): created before
/// the tool starts its threads, so a signal that comes while it starts is kept, not lost or
/// left to its default action; `wait()` then blocks until one has come. Async code runs a
/// `ServiceGroup` instead.
///
/// ```swift
/// let stop = try StopSignalWait([SIGTERM, SIGINT])
/// try proxy.start()
/// let signal = stop.wait()
/// proxy.stop()
/// ```
public final class StopSignalWait: Sendable {
    /// The first signal that came, shared with the subscription's closure.
    private final class Received: Sendable {
        let number = Mutex<Int32?>(nil)
        let arrived = DispatchSemaphore(value: 0)
    }

    private let subscription: Int
    private let received = Received()

    /// Handles `signals` from now on. Throws when the handler's pipe cannot be made.
    public init(_ signals: [Int32]) throws(ServiceGroup.StopSignalsUnavailable) {
        let received = received
        subscription = try StopSignals.shared.subscribe(signals) { number in
            let first = received.number.withLock { (kept: inout Int32?) -> Bool in
                guard kept == nil else { return false }
                kept = number
                return true
            }
            if first { received.arrived.signal() }
        }
    }

    deinit { StopSignals.shared.unsubscribe(subscription) }

    /// Blocks until one of the signals has come (at once if one already has); returns its number.
    public func wait() -> Int32 {
        if let number = received.number.withLock({ $0 }) { return number }
        received.arrived.wait()
        received.arrived.signal()  // a second wait() returns at once too
        return received.number.withLock { $0 } ?? 0
    }
}
