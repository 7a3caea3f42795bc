import Foundation

/// A push service's reason table when its answer carries a result code in the body (Xiaomi,
/// OPPO, vivo): the code is the recorded reason; a few codes have meanings of their own, and
/// the rest falls back on the HTTP status (429 and 5xx retry; anything else fails: wrong
/// credentials, a signature or a message the service refuses, which no retry changes). Pure.
public struct ResultCodeTable: Sendable {
    public var success: String
    /// The auth token was refused: fetch a new one and retry.
    public var authTokenRejected: Set<String>
    /// The registration id is not (or no longer) this app's device.
    public var invalidRegistration: Set<String>
    /// Busy or rate limited: later.
    public var later: Set<String>
    /// Over the day's quota: later too, but no sooner than ``quotaRetryFloor`` (a ring's window
    /// is shorter, so such a ring is not retried; a day-long missed-call notice is, hourly).
    public var quota: Set<String>

    /// How long a job waits after a quota answer.
    public static let quotaRetryFloor: TimeInterval = 3600

    public init(
        success: String, authTokenRejected: Set<String> = [], invalidRegistration: Set<String>, later: Set<String>,
        quota: Set<String> = []
    ) {
        self.success = success
        self.authTokenRejected = authTokenRejected
        self.invalidRegistration = invalidRegistration
        self.later = later
        self.quota = quota
    }

    public func action(status: Int, reason: String?) -> PushAction {
        if status == 200, reason == success { return .delivered }
        if let reason {
            if authTokenRejected.contains(reason) { return .refreshProviderTokenAndRetry }
            if invalidRegistration.contains(reason) { return .deleteToken }
            if later.contains(reason) || quota.contains(reason) { return .retry }
        }
        switch status {
        case 429, 500...599: return .retry
        default: return .fail
        }
    }
}
