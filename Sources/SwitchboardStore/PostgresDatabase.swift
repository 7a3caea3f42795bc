import Dispatch
import Foundation
import Synchronization

/// The server's store on PostgreSQL: one writer connection and a pool of reader connections,
/// with the migrations applied at open by one instance at a time (``PostgresMigrator``).
///
/// Every write transaction of every instance first takes one transaction-scoped advisory
/// lock, so writes to one database commit one at a time, as SQLite's do. That one rule keeps
/// every invariant the repositories rely on across instances: a checked "no live call here"
/// still holds at commit, and event ids (one sequence) become visible in id order, so a
/// reader's cursor never passes an id that commits later. A transaction that loses anyway
/// (a deadlock, a serialization failure) or whose connection broke before `COMMIT` is run
/// again on a fresh connection, up to ``maximumAttempts`` times.
///
/// Reads run at `REPEATABLE READ`, `READ ONLY`: one snapshot for all their statements. All
/// blocking libpq work runs on the store's own serial queues, never on the caller's thread.
public final class PostgresDatabase: Sendable {
    /// How often a write transaction is tried before its failure is thrown.
    public static let maximumAttempts = 5
    /// The advisory lock every write transaction takes ("SWBDWRIT").
    public static let writeLockKey: Int64 = 0x5357_4244_5752_4954

    /// The highest applied migration version after open.
    public let migratedVersion: Int

    /// The connection string (with its password: never log it; ``PostgresURL/redacted(_:)``).
    private let url: String
    private let writer: ConfinedConnection<PostgresConnection>
    private let writerQueue = DispatchQueue(label: "switchboard.store.postgres.writer")
    /// Marks the writer queue, so `close()` can tell it runs on it.
    private static let writerQueueKey = DispatchSpecificKey<Bool>()
    private let readers: ReaderPool<PostgresConnection>
    private let closedFlag = ClosedFlag()

    /// Connects `readerCount + 1` connections to `url` and applies `migrations` (PostgreSQL's
    /// dialect). Throws ``StoreError`` (``StoreError/Code/io`` when PostgreSQL cannot be
    /// reached, ``StoreError/Code/migration`` when the schema cannot be brought up to date).
    /// Errors never show the URL's password.
    public init(url: String, migrations: [Migration], readerCount: Int = 4) throws {
        guard readerCount >= 1 else {
            throw StoreError(code: .configuration, message: "readerCount must be at least 1, got \(readerCount)")
        }
        // Migrations on a connection of their own, without the sessions' time limits: a
        // migration may take long, and waiting for another instance's is normal.
        let migrator = try Self.connect(url, parameters: [:])
        do {
            migratedVersion = try PostgresMigrator.migrate(migrator, migrations)
            migrator.close()
        } catch let error as PostgresError {
            migrator.close()
            throw StoreError(code: .migration, message: error.message, sql: error.sql)
        }
        let writer = try Self.connect(url)
        var readers: [PostgresConnection] = []
        for _ in 0..<readerCount {
            readers.append(try Self.connect(url))
        }
        self.url = url
        self.writer = ConfinedConnection(connection: writer)
        writerQueue.setSpecific(key: Self.writerQueueKey, value: true)
        self.readers = ReaderPool(connections: readers, label: "switchboard.store.postgres.reader")
    }

    /// Limits of every store session, so a stuck instance cannot hold the others up: a
    /// transaction left idle (a frozen process holding the write lock) ends after 60 s, a
    /// lock wait after 10 s (then the write is retried), a statement after 60 s.
    public static let sessionParameters = [
        "options": "-c idle_in_transaction_session_timeout=60000 -c lock_timeout=10000 -c statement_timeout=60000"
    ]

    private static func connect(
        _ url: String, parameters: [String: String] = sessionParameters
    ) throws -> PostgresConnection {
        do {
            return try PostgresConnection(url: url, parameters: parameters)
        } catch {
            throw StoreError(code: .io, message: error.message)
        }
    }

    /// Runs `body` in one write transaction (see the type's notes on the lock and retries);
    /// `afterCommit` runs on the writer queue right after `COMMIT`, before the next write.
    @discardableResult
    public func write<T: Sendable>(
        _ body: @escaping @Sendable (PostgresExecutor) throws -> T, afterCommit: (@Sendable (T) -> Void)? = nil
    ) async throws -> T {
        try checkOpen()
        let writer = self.writer, closed = self.closedFlag
        return try await withCheckedThrowingContinuation { continuation in
            writerQueue.async {
                let result = Result { try Self.runWrite(on: writer.connection, closed: closed, body) }
                if case .success(let value) = result { afterCommit?(value) }
                continuation.resume(with: result)
            }
        }
    }

    private static func runWrite<T>(
        on connection: PostgresConnection, closed: ClosedFlag, _ body: (PostgresExecutor) throws -> T
    ) throws -> T {
        var attempt = 1
        while true {
            var committing = false
            do {
                if !connection.isOpen {
                    // Closed by close() (this write was queued behind it): say so, do not reconnect.
                    try closed.checkOpen()
                    try reset(connection)
                }
                let executor = PostgresExecutor(connection: connection)
                try executor.run("BEGIN ISOLATION LEVEL READ COMMITTED", [])
                try executor.run("SELECT pg_advisory_xact_lock(?)", [.integer(writeLockKey)])
                let value = try body(executor)
                committing = true
                // A transaction that failed inside is rolled back by its COMMIT, silently: its
                // events must not be delivered as if written.
                let tag = try connection.execute("COMMIT").command
                guard tag == "COMMIT" else {
                    throw StoreError(
                        code: .unknown(0),
                        message: "PostgreSQL answered COMMIT with \(tag): the transaction was rolled back")
                }
                return value
            } catch {
                _ = try? connection.execute("ROLLBACK")
                // A broken connection during COMMIT leaves the outcome unknown: never run again.
                let again = !committing && (Self.isLostRace(error) || !connection.isOpen)
                guard again, attempt < maximumAttempts else { throw error }
                attempt += 1
            }
        }
    }

    private static func isLostRace(_ error: any Error) -> Bool {
        (error as? StoreError)?.code == .busy
    }

    private static func reset(_ connection: PostgresConnection) throws {
        do {
            try connection.reset()
        } catch {
            throw StoreError(code: .io, message: error.message)
        }
    }

    /// Runs `body` on one `REPEATABLE READ, READ ONLY` snapshot on a reader connection and
    /// returns its result; waits (suspended) while every reader is busy. A reader whose
    /// connection broke is reconnected and the read run once more.
    @discardableResult
    public func read<T: Sendable>(_ body: @escaping @Sendable (PostgresExecutor) throws -> T) async throws -> T {
        try checkOpen()
        let reader = try await readers.acquire()
        let readers = self.readers
        return try await withCheckedThrowingContinuation { continuation in
            reader.queue.async {
                let connection = reader.connection.connection
                var result = Result { try Self.runRead(on: connection, body) }
                // Once more on a reconnected connection, or after a lost race / stale statement.
                if case .failure(let error) = result, !connection.isOpen || Self.isLostRace(error) {
                    result = Result { try Self.runRead(on: connection, body) }
                }
                readers.release(reader)
                continuation.resume(with: result)
            }
        }
    }

    private static func runRead<T>(
        on connection: PostgresConnection, _ body: (PostgresExecutor) throws -> T
    ) throws -> T {
        if !connection.isOpen { try reset(connection) }
        let executor = PostgresExecutor(connection: connection)
        try executor.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [])
        do {
            let value = try body(executor)
            try executor.run("COMMIT", [])
            return value
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// A listener on `channel` of this database, on a connection of its own (see
    /// ``PostgresListener``); it listens once its `run()` runs.
    public func listener(
        channel: String, onNotice: @escaping @Sendable (String) -> Void, onListening: @escaping @Sendable () -> Void
    ) throws -> any StoreNoticeListener {
        try postgresListener(channel: channel, onNotice: onNotice, onListening: onListening)
    }

    /// ``listener(channel:onNotice:onListening:)`` as the PostgreSQL type it is.
    public func postgresListener(
        channel: String, onNotice: @escaping @Sendable (String) -> Void, onListening: @escaping @Sendable () -> Void
    ) throws -> PostgresListener {
        try PostgresListener(url: url, channel: channel, onNotice: onNotice, onListening: onListening)
    }

    /// `pg_notify(channel, payload)` in the transaction of `executor`: PostgreSQL delivers it at
    /// commit, and not at all on rollback.
    public func send(_ payload: String, on channel: String, in executor: any SQLExecutor) throws {
        _ = try executor.query("SELECT pg_notify(?, ?)", [.text(channel), .text(payload)])
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { closedFlag.isClosed }

    /// Closes every connection; idempotent. Writes already queued finish first; reads in flight
    /// finish and their connections close as they return.
    public func close() {
        guard closedFlag.close() else { return }
        readers.close()
        let writer = self.writer
        // From inside a write body (on the writer queue) a sync would wait for itself.
        if DispatchQueue.getSpecific(key: Self.writerQueueKey) != nil {
            writerQueue.async { writer.connection.close() }
        } else {
            writerQueue.sync { writer.connection.close() }
        }
    }

    private func checkOpen() throws { try closedFlag.checkOpen() }
}

extension PostgresDatabase: SQLStore, StoreNotices {
    public var dialect: SQLDialect { .postgres }
    public var isShared: Bool { true }
    /// PostgreSQL keeps its own house (autovacuum, checkpoints).
    public var upkeep: (any StoreUpkeep)? { nil }
    public var notices: (any StoreNotices)? { self }

    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLExecutor) throws -> T, afterCommit: (@Sendable (T) -> Void)?
    ) async throws -> T {
        try await write({ executor in try body(executor) }, afterCommit: afterCommit)
    }

    public func transactionAtStart<T>(_ body: (any SQLExecutor) throws -> T) throws -> T {
        try checkOpen()
        let writer = self.writer, closed = self.closedFlag
        return try writerQueue.sync { try Self.runWrite(on: writer.connection, closed: closed) { try body($0) } }
    }

    public func snapshot<T: Sendable>(
        onReaderQueue: Bool, _ body: @escaping @Sendable (any SQLExecutor) throws -> T
    ) async throws -> T {
        try await read { executor in try body(executor) }
    }

    public func probe() async throws {
        _ = try await read { try $0.query("SELECT 1", []) }
    }
}
