import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardLifecycle
import SwitchboardObservability
import SwitchboardPush
import SwitchboardStore
import SwitchboardWire

/// Time and ids as injected values, so tests control both.
public struct ServerEnvironment: Sendable {
    /// The current time.
    public var now: @Sendable () -> Date
    /// A fresh id (a lowercase UUID string).
    public var newID: @Sendable () -> String
    /// Suspends until `now()` reaches the given moment (at once when it has); throws
    /// `CancellationError` when the task is cancelled. Background work that waits for a moment
    /// in stored time (the push dispatcher's next attempt) sleeps through this, so a test's
    /// manual clock wakes it.
    public var sleepUntil: @Sendable (Date) async throws -> Void

    /// The moment `duration` after now, on this clock.
    public func moment(after duration: Duration) -> Date { now().addingTimeInterval(duration.inSeconds) }

    /// Sleeps `duration` on this clock; throws `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws { try await sleepUntil(moment(after: duration)) }

    /// Wall-clock time, random UUIDs and real sleeps. The ids come from OpenSSL's generator,
    /// not Foundation's `UUID()`, which on Linux opens, reads and closes `/dev/urandom` for
    /// every id (three system calls on each call's path).
    public static let live = ServerEnvironment(now: { Date() }, newID: { SecureRandom.uuid() })

    /// Creates an environment. Without `sleepUntil`, a sleep lasts the real time between
    /// `now()` and the moment (measured against `now`, so a clock that is not the wall clock
    /// never turns it into zero-length sleeps).
    public init(
        now: @escaping @Sendable () -> Date, newID: @escaping @Sendable () -> String,
        sleepUntil: (@Sendable (Date) async throws -> Void)? = nil
    ) {
        self.now = now
        self.newID = newID
        self.sleepUntil =
            sleepUntil ?? { moment in
                let seconds = moment.timeIntervalSince(now())
                guard seconds > 0 else { return try Task.checkCancellation() }
                try await Task.sleep(for: .milliseconds(Int64((min(seconds, 86_400) * 1000).rounded(.up))))
            }
    }
}

/// The name of the background loop the current task runs (``SwitchboardLifecycle/BackgroundLoop``).
public typealias BackgroundLoop = SwitchboardLifecycle.BackgroundLoop

/// One write transaction as services see it: the connection, the time of the change, and an
/// event writer whose users are woken after the commit.
public final class WriteTransaction {
    /// The writer connection, inside the store's write transaction: the repositories' (services
    /// go through the repositories).
    let connection: any SQLExecutor
    /// The moment of this change, as stored text.
    public let timestamp: String
    /// The moment of this change.
    public let date: Date
    let environment: ServerEnvironment
    /// Whether other instances write to the same database (``SQLStore/isShared``).
    let shared: Bool
    /// The events this transaction wrote, per user, in id order.
    fileprivate(set) var written: [String: [Event]] = [:]
    /// On a shared (PostgreSQL) database: each written user's newest event id before this
    /// transaction's, so a waiter can tell whether these events are its next ones.
    fileprivate(set) var previous: [String: Int64] = [:]

    /// The limits the one limiter holds writes to.
    let limits: ServerLimits
    /// Whether an ended call leaves a `call` message in its conversation (`callMessages`).
    let callMessages: Bool
    /// Whether this transaction wrote outbox jobs (their runner is woken after the commit).
    fileprivate(set) var wroteOutboxJobs = false

    init(
        connection: any SQLExecutor, environment: ServerEnvironment, shared: Bool = false,
        limits: ServerLimits = ServerLimits(), callMessages: Bool = true
    ) {
        self.connection = connection
        self.environment = environment
        self.limits = limits
        self.callMessages = callMessages
        self.shared = shared
        date = environment.now()
        timestamp = Timestamp.iso8601(date)
    }

    /// A fresh id.
    public func newID() -> String { environment.newID() }

    /// Jobs were put back into the outbox: its runner looks once this commits.
    func noteOutboxJobs() { wroteOutboxJobs = true }

    /// Writes a job into the outbox; its runner starts on it once this commits.
    func enqueue(_ job: NewOutboxJob) throws {
        try outboxJobs.enqueue(job, at: CallStore.milliseconds(date))
        wroteOutboxJobs = true
    }

    // The repositories (`accounts`, `calls`, … `events`) come from ``SQLRepositories``.
    // Appending events goes through `appendEvent`, which wakes the users after the commit.

    /// Writes one event row per user (in the order given, duplicates dropped); their waiters
    /// are woken once the transaction commits.
    public func appendEvent(
        _ kind: EventKind, to userIDs: [String], conversationID: String? = nil, groupID: String? = nil,
        messageID: String? = nil, callID: String? = nil
    ) throws {
        var seen = Set<String>()
        let unique = userIDs.filter { seen.insert($0).inserted }
        let references = EventReferences(
            conversationID: conversationID, groupID: groupID, messageID: messageID, callID: callID)
        if shared { notePrevious(try events.newestIDs(of: unique.filter { written[$0] == nil }), of: unique) }
        remember(
            try events.append(kind, to: unique, references: references, at: timestamp), kind: kind,
            references: references)
    }

    /// Writes one event row for each member of `groupID` (in the order they joined); their
    /// waiters are woken once the transaction commits.
    public func appendEvent(
        _ kind: EventKind, toMembersOf groupID: String, messageID: String? = nil, callID: String? = nil
    ) throws {
        let references = EventReferences(groupID: groupID, messageID: messageID, callID: callID)
        if shared { notePrevious(try events.newestIDs(ofMembersOf: groupID), of: nil) }
        remember(
            try events.append(kind, toMembersOf: groupID, references: references, at: timestamp), kind: kind,
            references: references)
    }

    /// Users whose held requests should look again once this commits, though no event of
    /// theirs was written (a session of theirs ended): on every instance.
    fileprivate(set) var woken: Set<String> = []

    /// Wakes `userIDs`' held requests (long polls, streams) on every instance after the commit.
    func wake(_ userIDs: [String]) { woken.formUnion(userIDs) }

    /// Keeps each user's newest id from before this transaction's first event for them.
    private func notePrevious(_ newest: [String: Int64], of userIDs: [String]?) {
        for (userID, id) in newest where written[userID] == nil && previous[userID] == nil { previous[userID] = id }
        for userID in userIDs ?? [] where written[userID] == nil && previous[userID] == nil { previous[userID] = 0 }
    }

    /// Keeps written events for their users' waiters (woken after the commit).
    private func remember(_ rows: [(userID: String, id: Int64)], kind: EventKind, references: EventReferences) {
        for (userID, id) in rows {
            written[userID, default: []].append(
                Event(
                    id: id, kind: kind, conversationId: references.conversationID, groupId: references.groupID,
                    messageId: references.messageID, callId: references.callID, createdAt: timestamp))
        }
    }
}

/// The repositories over one transaction or snapshot: what services read and write through.
/// ``WriteTransaction`` and ``ReadSnapshot`` have them all, so a helper that only reads takes
/// either.
protocol Repositories {
    var accounts: any AccountRepository { get }
    var calls: any CallRepository { get }
    var devices: any DeviceRepository { get }
    var events: any EventRepository { get }
    var friends: any FriendRepository { get }
    var groups: any GroupRepository { get }
    var messages: any MessageRepository { get }
    var pushJobs: any PushJobRepository { get }
    var rateCounters: any RateCounterRepository { get }
    var gateway: any GatewayRepository { get }
    var gatewaySignals: any GatewaySignalRepository { get }
    var outboxJobs: any OutboxJobRepository { get }
    var webhookEndpoints: any WebhookEndpointRepository { get }
    var liveLocations: any LiveLocationRepository { get }
    var e2ee: any E2EERepository { get }
    var callDirectory: any CallDirectoryRepository { get }
    var scheduledCalls: any ScheduledCallRepository { get }
    var relayPresence: any RelayPresenceRepository { get }
    var pushPreferences: any PushPreferenceRepository { get }
}

/// The SQL repositories over a transaction's or snapshot's connection (SQLite or PostgreSQL):
/// one list of them for ``WriteTransaction`` and ``ReadSnapshot`` alike.
protocol SQLRepositories: Repositories {
    var connection: any SQLExecutor { get }
}

extension SQLRepositories {
    var accounts: any AccountRepository { SQLAccountRepository(connection: connection) }
    var calls: any CallRepository { SQLCallRepository(connection: connection) }
    var devices: any DeviceRepository { SQLDeviceRepository(connection: connection) }
    var events: any EventRepository { SQLEventRepository(connection: connection) }
    var friends: any FriendRepository { SQLFriendRepository(connection: connection) }
    var groups: any GroupRepository { SQLGroupRepository(connection: connection) }
    var messages: any MessageRepository { SQLMessageRepository(connection: connection) }
    var pushJobs: any PushJobRepository { SQLPushJobRepository(connection: connection) }
    var rateCounters: any RateCounterRepository { SQLRateCounterRepository(connection: connection) }
    var gateway: any GatewayRepository { SQLGatewayRepository(connection: connection) }
    var gatewaySignals: any GatewaySignalRepository { SQLGatewaySignalRepository(connection: connection) }
    var outboxJobs: any OutboxJobRepository { SQLOutboxJobRepository(connection: connection) }
    var webhookEndpoints: any WebhookEndpointRepository { SQLWebhookEndpointRepository(connection: connection) }
    var liveLocations: any LiveLocationRepository { SQLLiveLocationRepository(connection: connection) }
    var e2ee: any E2EERepository { SQLE2EERepository(connection: connection) }
    var callDirectory: any CallDirectoryRepository { SQLCallDirectoryRepository(connection: connection) }
    var scheduledCalls: any ScheduledCallRepository { SQLScheduledCallRepository(connection: connection) }
    var relayPresence: any RelayPresenceRepository { SQLRelayPresenceRepository(connection: connection) }
    var pushPreferences: any PushPreferenceRepository { SQLPushPreferenceRepository(connection: connection) }
}

extension WriteTransaction: SQLRepositories {}
extension ReadSnapshot: SQLRepositories {}

/// One read snapshot as services see it: the repositories over it.
public struct ReadSnapshot {
    /// The reader connection, inside one snapshot: the repositories'.
    let connection: any SQLExecutor
}

/// The database plus the event hub: every write that appends events wakes those users'
/// held requests right after its commit, never before and never by polling.
public final class ServerStore: Sendable {
    /// The database: the embedded SQLite one or PostgreSQL.
    public let backend: any SQLStore
    /// Held event requests.
    public let hub: EventHub
    /// Time and ids.
    public let environment: ServerEnvironment
    /// This process among the instances on one database (a fresh id at each start): the
    /// event notices it sends carry it, and it ignores its own.
    public let instanceID: String
    /// The limits of the one limiter (``RateLimiter``), which write transactions carry.
    public let limits: ServerLimits
    /// Whether an ended call leaves a `call` message in its conversation (`callMessages`).
    public let callMessages: Bool
    /// Called after every commit that wrote outbox jobs: their runners wake.
    private let outboxObservers = Mutex<[@Sendable () -> Void]>([])

    /// `wake` is called after every commit that wrote outbox jobs.
    func observeOutboxJobs(_ wake: @escaping @Sendable () -> Void) {
        outboxObservers.withLock { $0.append(wake) }
    }

    private func outboxJobsCommitted() {
        for wake in outboxObservers.withLock({ $0 }) { wake() }
    }

    /// Creates the store; without `hub`, one on `environment`'s clock.
    public init(
        backend: any SQLStore, hub: EventHub? = nil, environment: ServerEnvironment = .live,
        limits: ServerLimits = ServerLimits(), callMessages: Bool = true
    ) {
        self.backend = backend
        self.limits = limits
        self.callMessages = callMessages
        self.hub = hub ?? EventHub(environment: environment)
        self.environment = environment
        instanceID = environment.newID()
    }

    /// The store on the embedded SQLite database.
    public convenience init(database: Database, hub: EventHub? = nil, environment: ServerEnvironment = .live) {
        self.init(backend: database, hub: hub, environment: environment)
    }

    /// Runs `body` in one write transaction; right after it commits (in commit order) hands the
    /// events it wrote to their users' waiters. A thrown error rolls everything back and wakes
    /// nobody. `body` may run again when the transaction lost to a concurrent one
    /// (PostgreSQL), so it must not act outside the transaction.
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        let environment = self.environment
        let hub = self.hub, instanceID = self.instanceID, shared = backend.isShared, limits = self.limits,
            notices = backend.notices, callMessages = self.callMessages
        let (result, _, _, _, _) = try await backend.transaction(
            { connection in
                let transaction = WriteTransaction(
                    connection: connection, environment: environment, shared: shared, limits: limits,
                    callMessages: callMessages)
                let result = try body(transaction)
                // Other instances hear of the events (and the users to wake) when this commits.
                if let notices {
                    try EventNotice.send(
                        for: Set(transaction.written.keys).union(transaction.woken), instance: instanceID,
                        through: notices, on: connection)
                }
                return (
                    result, transaction.written, transaction.previous, transaction.woken, transaction.wroteOutboxJobs
                )
            },
            afterCommit: { output in
                if output.4 { self.outboxJobsCommitted() }
                // On PostgreSQL another instance may have committed events of the same users just
                // before, whose notice is still on its way: `previous` lets each waiter tell.
                if !output.1.isEmpty { hub.deliver(output.1, previous: output.2) }
                if !output.3.isEmpty { hub.changed(output.3) }
            })
        return result
    }

    /// Runs `body` on a reader connection inside one snapshot (white-box tests look at tables
    /// this way; services go through ``snapshot(onReaderQueue:_:)``'s repositories).
    public func read<T: Sendable>(
        onReaderQueue: Bool = false, _ body: @escaping @Sendable (any SQLExecutor) throws -> T
    ) async throws -> T {
        try await backend.snapshot(onReaderQueue: onReaderQueue, body)
    }

    /// Listens for other instances' event notices and wakes this one's waiters for them, until
    /// cancelled; returns at once on SQLite (one instance, nothing to hear). After each (re)connect
    /// every waiter re-reads, so a notice missed while the connection was down is not lost.
    public func listenForOtherInstances(logger: Logger) async {
        guard let notices = backend.notices else { return }
        let hub = self.hub, instanceID = self.instanceID
        let listener: any StoreNoticeListener
        do {
            listener = try notices.listener(
                channel: EventNotice.channel,
                onNotice: { payload in
                    guard let notice = EventNotice.parse(payload), notice.instance != instanceID else { return }
                    hub.changed(notice.userIDs)
                },
                onListening: { hub.everythingChanged() })
        } catch {
            logger.error("cannot listen for other instances' events", ["error": .string(String(describing: error))])
            return
        }
        await listener.run()
    }

    /// Runs `body` on one read snapshot, through its repositories. On SQLite a read runs on
    /// the calling thread (an event loop) once a reader is free, and `onReaderQueue` sends one
    /// that may scan a whole table to the reader's own queue instead; PostgreSQL's reads always
    /// run on its readers' queues.
    public func snapshot<T: Sendable>(
        onReaderQueue: Bool = false, _ body: @escaping @Sendable (ReadSnapshot) throws -> T
    ) async throws -> T {
        try await backend.snapshot(onReaderQueue: onReaderQueue) { connection in
            try body(ReadSnapshot(connection: connection))
        }
    }
}
