import Foundation
import SwitchboardPushCore

/// What the push dispatcher needs of the database that holds the outbox: the server implements
/// it on its store (SQLite or PostgreSQL). Times are milliseconds since 1970; a claim is a lease
/// held by ``instanceID``, and only its holder records an outcome.
public protocol PushOutboxStore: Sendable {
    /// This process, as claims name it.
    var instanceID: String { get }
    /// Whether other processes dispatch from the same database (their claims are live leases).
    var isShared: Bool { get }
    /// The store's clock: the current time.
    func now() -> Date
    /// Suspends until `now()` reaches `moment`; throws `CancellationError` when cancelled.
    func sleep(until moment: Date) async throws
    /// Voids every claim (a process that starts as the database's only dispatcher).
    func releaseClaims() async throws
    func outlook(at nowMS: Int64) async throws -> PushQueueOutlook
    /// Claims up to `limit` due jobs, leased for `leaseMS` from the moment the claim is written,
    /// skipping `skipping` (sends still running).
    func claim(dueAt nowMS: Int64, limit: Int, leaseMS: Int64, skipping: Set<String>) async throws -> [PushJob]
    /// Whether the job should still go out: its call still rings its user, and its token is still
    /// bound to a live session.
    func relevance(of job: PushJob) async throws -> PushJobRelevance
    /// Another attempt at `nextAttemptAtMS`; the claim ends. `attempted`: whether this one
    /// reached the service (a send handed back unsent for a connection did not, and counts as
    /// no attempt: its device was not rung).
    func reschedule(_ job: PushJob, nextAttemptAtMS: Int64, reason: String, attempted: Bool) async throws
    /// Ends the job (only as the claim's holder); `token` is what the answer says about the
    /// device's token, applied in the same transaction. Returns whether it applied.
    func finish(
        _ job: PushJob, _ outcome: PushJobOutcome, reason: String?, lastError: String?, attempted: Bool,
        at nowMS: Int64,
        token: PushTokenVerdict?
    ) async throws -> Bool
}

/// Whether a claimed job should still be sent.
public enum PushJobRelevance: Sendable, Equatable {
    case send
    /// The call stopped ringing this user (answered elsewhere, cancelled, ended).
    case callNotRinging
    /// The token is no longer bound to a live session.
    case deviceUnbound
    /// The device's payload key is not the one the job's payload was built for (a key
    /// registered, changed or dropped since): sending it would be in the clear, or unreadable.
    case payloadKeyChanged
}

/// What an answer says about the device's token.
public enum PushTokenVerdict: Sendable, Equatable {
    /// Dead: delete it.
    case forget
    /// Possibly the wrong environment or topic: delete it when that repeats.
    case doubt
}

extension Date {
    /// Milliseconds since 1970, as the outbox stores times.
    var outboxMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
}
