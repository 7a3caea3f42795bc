import Foundation
import SwitchboardPushCore

/// One ring job of a call, as the gateway's signal status shows it.
package struct RingJobStatus: Sendable, Equatable {
    package var userID: String
    package var deviceID: String
    package var channel: String
    package var state: String
    package var reason: String?

    package init(userID: String, deviceID: String, channel: String, state: String, reason: String? = nil) {
        self.userID = userID
        self.deviceID = deviceID
        self.channel = channel
        self.state = state
        self.reason = reason
    }
}

/// A push job as the outbox writes it, in the transaction that starts the ring. Its id is also
/// its `apns-id`, the same on every retry. Times are milliseconds since 1970.
public struct NewPushJob: Sendable, Equatable {
    public var id: String
    public var callID: String
    public var userID: String
    public var deviceID: String
    /// The service behind the channel (`apns`).
    public var provider: String
    /// The channel that sends it (the token kind the device registered, `ios-voip`).
    public var channel: String
    /// `ring` or `notice`.
    public var kind: String = PushJobKind.ring.rawValue
    public var token: String
    public var environment: String
    public var payload: String
    /// The request headers as a JSON array of [name, value] pairs.
    public var headers: String
    /// `pending`, or `failed` when the push could not be built (`reason` says why).
    public var state: String
    public var reason: String?
    public var createdAtMS: Int64
    public var expiresAtMS: Int64

    package init(
        id: String, callID: String, userID: String, deviceID: String, provider: String, channel: String,
        kind: String = PushJobKind.ring.rawValue, token: String, environment: String, payload: String, headers: String,
        state: String, reason: String? = nil, createdAtMS: Int64, expiresAtMS: Int64
    ) {
        self.id = id
        self.callID = callID
        self.userID = userID
        self.deviceID = deviceID
        self.provider = provider
        self.channel = channel
        self.kind = kind
        self.token = token
        self.environment = environment
        self.payload = payload
        self.headers = headers
        self.state = state
        self.reason = reason
        self.createdAtMS = createdAtMS
        self.expiresAtMS = expiresAtMS
    }
}

/// A finished job, for the operator's status view.
public struct FinishedPushJob: Sendable, Equatable {
    public var id: String
    public var callID: String
    public var userID: String
    public var provider: String
    public var channel: String
    public var token: String
    public var state: String
    public var reason: String?
    public var lastError: String?
    public var attempts: Int
    public var finishedAtMS: Int64?

    package init(
        id: String, callID: String, userID: String, provider: String, channel: String, token: String, state: String,
        reason: String? = nil, lastError: String? = nil, attempts: Int, finishedAtMS: Int64? = nil
    ) {
        self.id = id
        self.callID = callID
        self.userID = userID
        self.provider = provider
        self.channel = channel
        self.token = token
        self.state = state
        self.reason = reason
        self.lastError = lastError
        self.attempts = attempts
        self.finishedAtMS = finishedAtMS
    }
}

/// The outbox's totals for `GET /admin/push/status`.
public struct PushQueueReport: Sendable, Equatable {
    public struct Outcomes: Sendable, Equatable {
        public var provider: String
        public var channel: String
        public var state: String
        public var reason: String?
        public var count: Int

        public init(provider: String, channel: String, state: String, reason: String?, count: Int) {
            self.provider = provider
            self.channel = channel
            self.state = state
            self.reason = reason
            self.count = count
        }
    }

    public var pending: Int
    public var oldestPendingCreatedMS: Int64?
    /// Finished jobs counted by provider, channel, state and reason (most frequent first in each state).
    public var outcomes: [Outcomes]
    /// The newest jobs that ended undelivered after an error, newest first.
    public var newestFailures: [FinishedPushJob]

    package init(
        pending: Int, oldestPendingCreatedMS: Int64? = nil, outcomes: [Outcomes], newestFailures: [FinishedPushJob]
    ) {
        self.pending = pending
        self.oldestPendingCreatedMS = oldestPendingCreatedMS
        self.outcomes = outcomes
        self.newestFailures = newestFailures
    }
}

/// The push outbox: jobs written with the ring that needs them, claimed by the dispatcher for
/// a lease, retried, and finished with an outcome. SQLite implements it today
/// (``SQLPushJobRepository``); the contract suite tests every implementation.
package protocol PushJobRepository {
    func enqueue(_ job: NewPushJob) throws
    /// Voids every claim (a process that starts as the database's only dispatcher: SQLite).
    func releaseClaims() throws
    func outlook(at nowMS: Int64) throws -> PushQueueOutlook
    /// Claims up to `limit` jobs due at `nowMS` (oldest due first) for `instance`, leasing them
    /// until `leaseUntilMS`, skipping the ids in `skipping` (sends still running). A job is due
    /// when unclaimed or its lease ran out (its instance crashed or is stuck).
    func claim(
        dueAt nowMS: Int64, limit: Int, leaseUntilMS: Int64, by instance: String, skipping: Set<String>
    ) throws -> [PushJob]
    /// Another attempt at `nextAttemptAtMS`; the claim ends. Only the claim's holder (or anyone,
    /// for an unclaimed job) may: a late answer after another instance took the job over is
    /// dropped. Returns whether it applied.
    @discardableResult
    func reschedule(
        _ id: String, nextAttemptAtMS: Int64, reason: String, attempted: Bool, by instance: String
    ) throws
        -> Bool
    /// Ends a pending job (a finished one stays as it is), as ``reschedule(_:nextAttemptAtMS:reason:by:)``
    /// only for the claim's holder. `attempted`: an attempt was made; `lastError` replaces the
    /// stored error when given, `reason` when given. Returns whether it applied.
    @discardableResult
    func finish(
        _ id: String, _ outcome: PushJobOutcome, reason: String?, lastError: String?, attempted: Bool, at nowMS: Int64,
        by instance: String
    ) throws -> Bool
    /// The devices of `userID` a ring of `callID` may have reached: its ring job was delivered,
    /// attempted or is being sent. Only those need a notice when the ring ends.
    func rungDevices(callID: String, userID: String) throws -> Set<String>
    /// Every ring job of `callID`, by user and device: where each push stands.
    func rings(ofCall callID: String) throws -> [RingJobStatus]
    /// Drops the call's rings still waiting (unclaimed): a cancel takes them out at once.
    /// Returns how many it dropped.
    @discardableResult
    func dropPendingRings(ofCall callID: String, at nowMS: Int64) throws -> Int
    /// At most `failures` of the newest undelivered jobs that saw an error.
    func report(failures: Int) throws -> PushQueueReport
    /// Each job delivered since `sinceMS`: its channel and how long from its creation to its
    /// delivery (the console's push-latency chart), at most 20,000, newest last.
    func deliveries(sinceMS: Int64) throws -> [(channel: String, createdAtMS: Int64, deliveredAtMS: Int64)]
}
