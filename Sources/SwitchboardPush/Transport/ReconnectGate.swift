/// Decides when the client may open a connection, so that a burst of failures can never become a tight
/// reconnect loop (APNs treats rapid reconnects as abuse).
///
/// A pure value: the client's loop thread owns it and feeds it events with the current time.
/// - `idle` (at the start): no connection is proven yet, so exactly one request goes first as the probe.
/// - `open`: a connection was ready; requests flow and may connect whenever libcurl needs a connection.
/// - after a connection-level failure it is `closed` until a pause has passed (initial delay, doubling up to the
///   maximum); then exactly one request is let through as a `probing` request. When the probe gets a ready
///   connection the gate opens; when it fails the pause doubles. The pause resets only when a response arrives.
/// - Each admitted request carries the gate's `epoch`; a failure counts only when it comes from a request
///   admitted since the last counted failure, so the hundred streams of one dead connection count once.
struct ReconnectGate: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    enum State: Sendable, Equatable {
        case idle
        case open
        case closed(until: Instant)
        case probing(id: UInt64)
    }

    /// What the loop may start now.
    enum Admission: Sendable, Equatable {
        /// Every waiting request.
        case all
        /// One request, which becomes the probe (report it with ``probeAdmitted(id:)``).
        case one
        /// Nothing; look again at `until` (or on the next event when `nil`).
        case none(until: Instant?)
    }

    /// How a request that held a gate epoch ended.
    enum Outcome: Sendable, Equatable {
        /// A response arrived (any status).
        case responded
        /// A connection-level failure.
        case connectionFailed
        /// Anything else: cancelled, request-level error, shutdown.
        case other
    }

    let initialDelay: Duration
    let maximumDelay: Duration
    private(set) var state: State = .idle
    private(set) var nextDelay: Duration
    private(set) var epoch: UInt64 = 0
    /// A connection failed and none has been ready since: requests that wait now wait out an
    /// outage (not the first connection's set-up).
    private(set) var recovering = false

    init(initialDelay: Duration, maximumDelay: Duration) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.nextDelay = initialDelay
    }

    func admission(at now: Instant) -> Admission {
        switch state {
        case .open: .all
        case .idle: .one
        case .closed(let until): now >= until ? .one : .none(until: until)
        case .probing: .none(until: nil)
        }
    }

    /// The loop started the one request that ``admission(at:)`` allowed.
    mutating func probeAdmitted(id: UInt64) {
        switch state {
        case .idle, .closed: state = .probing(id: id)
        case .open, .probing: break
        }
    }

    /// libcurl wants to open a socket for request `id`: allowed while open, and for the probe.
    func mayConnect(id: UInt64) -> Bool {
        switch state {
        case .open: true
        case .probing(let probe): probe == id
        case .idle, .closed: false
        }
    }

    /// A connection is ready for request `id` (libcurl's pre-request callback): the probe succeeded.
    mutating func connectionReady(id: UInt64) {
        if case .probing(let probe) = state, probe == id { state = .open }
        if state == .open { recovering = false }
    }

    /// Request `id`, admitted at `epoch`, ended with `outcome`.
    mutating func requestFinished(id: UInt64, epoch requestEpoch: UInt64, outcome: Outcome, at now: Instant) {
        switch outcome {
        case .responded:
            if requestEpoch == epoch { nextDelay = initialDelay }
            if case .probing(let probe) = state, probe == id { state = .open }
            if state == .open { recovering = false }
        case .connectionFailed:
            guard requestEpoch == epoch else { return }
            recovering = true
            state = .closed(until: now + nextDelay)
            nextDelay = min(nextDelay * 2, maximumDelay)
            epoch &+= 1
        case .other:
            // A probe that ended without a verdict frees the probe slot at once.
            if case .probing(let probe) = state, probe == id { state = .idle }
        }
    }
}
