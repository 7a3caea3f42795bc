import Foundation

/// The network quality the SDK's own requests see, shared by the client that measures and the
/// coordinator that sets its answer deadline from it: a ``NetworkQualityEstimator`` under a
/// lock, on an injected monotonic clock.
///
/// Every `SwitchboardClient` has one (``SwitchboardClient/networkQuality``); each request's
/// round trip is recorded, and a request that got no answer counts as a loss. Held requests
/// (long polls, the caller's held media token) are not: their time is the server's hold.
///
/// ```swift
/// let quality = client.networkQuality.current
/// print(quality.roundTrip ?? 0, quality.loss, quality.answerDeadline)
/// ```
public final class NetworkQualityMonitor: Sendable {
    /// What the window says now.
    public struct Quality: Sendable, Equatable {
        /// The mean round trip (seconds); nil without an answered sample.
        public var roundTrip: Double?
        /// The share of requests that got no answer, 0…1.
        public var loss: Double
        /// Samples in the window.
        public var samples: Int
        /// The adaptive answer deadline (seconds) they call for.
        public var answerDeadline: Double
    }

    private let estimator = LockedState(NetworkQualityEstimator())
    private let now: @Sendable () -> Double

    /// - Parameter now: monotonic seconds (injected for tests on a manual clock).
    public init(now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.now = now
    }

    /// The current moment on the monitor's clock (when a request is sent).
    public var moment: Double { now() }

    /// A request sent at `sentAt` (``moment``) was answered now.
    public func recordAnswer(sentAt: Double) {
        let moment = now()
        estimator.withLock { $0.answered(after: moment - sentAt, at: moment) }
    }

    /// A request got no answer (a transport failure or a timeout).
    public func recordLoss() {
        let moment = now()
        estimator.withLock { $0.lost(at: moment) }
    }

    /// The window as of now.
    public var current: Quality {
        let moment = now()
        return estimator.withLock { estimator in
            Quality(
                roundTrip: estimator.roundTrip(at: moment), loss: estimator.loss(at: moment),
                samples: estimator.current(at: moment).count, answerDeadline: estimator.answerDeadline(at: moment))
        }
    }

    /// The adaptive answer deadline now (seconds).
    public var answerDeadline: Double {
        let moment = now()
        return estimator.withLock { $0.answerDeadline(at: moment) }
    }
}
