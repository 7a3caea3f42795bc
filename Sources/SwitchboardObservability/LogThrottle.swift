import Foundation

/// Decides which occurrences of a repeating condition get a log line: the first of each kind,
/// then at most one per `interval`, which carries how many were left out since the last line.
/// A pure value: the caller passes the time and holds it under a lock.
public struct LogThrottle: Sendable {
    public enum Decision: Sendable, Equatable {
        /// Write a line; `suppressed` occurrences of this kind were not logged since the last one.
        case log(suppressed: Int)
        case suppress
    }

    public let interval: Duration
    private var windows: [String: (opened: ContinuousClock.Instant, suppressed: Int)] = [:]

    public init(interval: Duration) { self.interval = interval }

    /// One occurrence of `kind` at `now`.
    public mutating func occurred(_ kind: String, at now: ContinuousClock.Instant) -> Decision {
        if var window = windows[kind], now - window.opened < interval {
            window.suppressed += 1
            windows[kind] = window
            return .suppress
        }
        let suppressed = windows[kind]?.suppressed ?? 0
        // Kinds may be error texts: past 1,000 of them, forget the windows that have closed.
        if windows.count >= 1000 { windows = windows.filter { now - $0.value.opened < interval } }
        windows[kind] = (now, 0)
        return .log(suppressed: suppressed)
    }
}
