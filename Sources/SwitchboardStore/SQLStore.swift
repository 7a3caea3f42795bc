/// A store that runs repositories' statements in transactions: the embedded SQLite
/// ``Database`` or ``PostgresDatabase``. The server holds one of them behind this seam.
public protocol SQLStore: Sendable {
    /// Which SQL the store speaks.
    var dialect: SQLDialect { get }
    /// The schema version the store is at (the newest migration applied at open).
    var migratedVersion: Int { get }
    /// Whether other server processes may write to the same database at the same time
    /// (PostgreSQL); SQLite's file has this one process. A shared store needs its commits told
    /// to the others, and leaves claims of others alone.
    var isShared: Bool { get }

    /// Runs `body` in one write transaction and returns its result; `afterCommit` runs right
    /// after the commit and before the next write of this process starts, so successive calls
    /// see commits in commit order. A thrown error rolls everything back. `body` may run more
    /// than once (a transaction that lost to a concurrent one is run again), so it must not
    /// have effects outside the transaction.
    func transaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLExecutor) throws -> T, afterCommit: (@Sendable (T) -> Void)?
    ) async throws -> T

    /// Runs `body` in one write transaction and returns its result, blocking the calling thread
    /// until it committed: for start-up only (reading or creating a server-wide value before
    /// anything serves), never from an event loop or Swift's cooperative pool.
    func transactionAtStart<T>(_ body: (any SQLExecutor) throws -> T) throws -> T

    /// Runs `body` on one consistent snapshot and returns its result. `onReaderQueue` asks for
    /// a thread of the store's own even where small reads would run on the caller's (a read
    /// that may scan a whole table).
    func snapshot<T: Sendable>(
        onReaderQueue: Bool, _ body: @escaping @Sendable (any SQLExecutor) throws -> T
    ) async throws -> T

    /// Answers whether the store can serve a read now (`SELECT 1`); throws when it cannot.
    func probe() async throws

    /// Closes every connection; later calls throw ``StoreError/Code/closed``.
    func close()

    /// The store's periodic upkeep, for its owner to run every `interval` (SQLite: folding the
    /// WAL back into the database file); nil when it needs none.
    var upkeep: (any StoreUpkeep)? { get }

    /// Notices between the processes that share the store (PostgreSQL's NOTIFY and LISTEN);
    /// nil for a store one process owns.
    var notices: (any StoreNotices)? { get }
}

/// Work a store needs done from time to time, which its owner schedules.
public protocol StoreUpkeep: Sendable {
    /// What it is, for logs.
    var name: String { get }
    /// How often it should run.
    var interval: Duration { get }
    /// Does it once.
    func run() async throws
}

/// Notices between the processes that share a store. A notice is sent inside a write
/// transaction and delivered when, and only if, it commits, to every listener on its channel
/// (the sender's own included).
public protocol StoreNotices: Sendable {
    /// Sends `payload` on `channel` when the transaction of `executor` commits.
    func send(_ payload: String, on channel: String, in executor: any SQLExecutor) throws
    /// A listener on `channel`, on a connection of its own; it listens once its `run()` runs,
    /// tells `onListening` after each (re)connect, and runs until its task is cancelled.
    func listener(
        channel: String, onNotice: @escaping @Sendable (String) -> Void, onListening: @escaping @Sendable () -> Void
    ) throws -> any StoreNoticeListener
}

/// A running listener of ``StoreNotices``.
public protocol StoreNoticeListener: Sendable {
    /// Listens until the task running it is cancelled, reconnecting when the connection drops.
    func run() async
}

extension Database: SQLStore {
    public var dialect: SQLDialect { .sqlite }
    public var isShared: Bool { false }

    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLExecutor) throws -> T, afterCommit: (@Sendable (T) -> Void)?
    ) async throws -> T {
        try await write({ connection in try body(connection) }, afterCommit: afterCommit)
    }

    public func snapshot<T: Sendable>(
        onReaderQueue: Bool, _ body: @escaping @Sendable (any SQLExecutor) throws -> T
    ) async throws -> T {
        try await read(onReaderQueue: onReaderQueue) { connection in try body(connection) }
    }

    public func transactionAtStart<T>(_ body: (any SQLExecutor) throws -> T) throws -> T {
        try writeNow { connection in try body(connection) }
    }

    public func probe() async throws {
        _ = try await read { try $0.query("SELECT 1") }
    }

    /// A WAL checkpoint every second.
    public var upkeep: (any StoreUpkeep)? { WALCheckpoint(database: self) }

    /// One process owns the file: nobody to tell.
    public var notices: (any StoreNotices)? { nil }
}

/// SQLite's upkeep: ``Database/checkpoint()`` every second, so the WAL stays short.
struct WALCheckpoint: StoreUpkeep {
    let database: Database
    var name: String { "WAL checkpoint" }
    var interval: Duration { .seconds(1) }

    func run() async throws {
        try await database.checkpoint()
    }
}
