import Foundation

/// SPEC §3: network errors, timeouts, 5xx and 429 retry after `min(2^attempt, 8)` seconds plus
/// up to 0.5 s of jitter, until the job's expiration.
public enum PushRetryPolicy {
    /// The delay before attempt number `attempt + 1` (attempt counts from 0 for the first retry).
    /// `jitter` is a number in 0..<1 (injected, so tests are exact).
    public static func delay(afterAttempt attempt: Int, jitter: Double) -> TimeInterval {
        let base = attempt >= 3 ? 8.0 : Double(1 << max(0, attempt))
        return min(base, 8) + 0.5 * min(max(jitter, 0), 0.999_999)
    }

    /// When to try again, or `nil` when that would be at or past the expiration.
    public static func nextAttempt(after now: Date, attempt: Int, jitter: Double, expiresAt: Date) -> Date? {
        let next = now.addingTimeInterval(delay(afterAttempt: attempt, jitter: jitter))
        return next < expiresAt ? next : nil
    }
}
