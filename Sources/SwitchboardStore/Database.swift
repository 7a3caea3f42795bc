import CSQLite
import Dispatch
import Foundation
import Synchronization

/// The SQLite database of the server: one writer connection and a pool of reader connections,
/// all in WAL mode, with migrations applied at open.
///
/// Writes are serialised on a dedicated queue and run inside `BEGIN IMMEDIATE … COMMIT`; reads run
/// concurrently on the readers, each inside one transaction so it sees a single snapshot.
/// Blocking SQLite work never runs on Swift's cooperative thread pool.
/// ```swift
/// let database = try Database(
///     configuration: DatabaseConfiguration(path: "data/switchboard.sqlite"), migrations: migrations)
/// let id = try await database.write { connection in
///     try connection.run("INSERT INTO users (name) VALUES (?)", ["ada"])
///     return connection.lastInsertRowID
/// }
/// let names = try await database.read { connection in
///     try connection.query("SELECT name FROM users").map { try $0.string("name") }
/// }
/// ```
public final class Database: Sendable {
    /// The configuration the database was opened with.
    public let configuration: DatabaseConfiguration
    /// The highest applied migration version after open (0 when there are none).
    public let migratedVersion: Int
    /// The migrations this open applied, in order; empty when the schema was already current.
    public let appliedMigrations: [Migration]

    private let writer: ConfinedConnection<SQLiteConnection>
    private let writerQueue: DispatchQueue
    /// A connection of its own for checkpoints, so their fsyncs never run inside a commit.
    private let checkpointer: ConfinedConnection<SQLiteConnection>
    private let checkpointQueue = DispatchQueue(label: "switchboard.store.checkpoint")
    private let readers: ReaderPool<SQLiteConnection>
    private let closedFlag = ClosedFlag()
    /// This process's hold on the database file (released at close), unless not exclusive.
    private let fileLock: DatabaseFileLock?

    /// Opens the database, creating the file and its parent directory if missing, and applies
    /// pending migrations in ascending version order.
    ///
    /// Throws ``StoreError`` with ``StoreError/Code/migration`` when a migration fails (the
    /// database stays at the previous version) or when the database is at a version this build
    /// does not know; ``StoreError/Code/configuration`` when WAL mode cannot be enabled or the
    /// configuration is invalid.
    public init(configuration: DatabaseConfiguration, migrations: [Migration] = []) throws {
        guard configuration.readerCount >= 1 else {
            throw StoreError(
                code: .configuration, message: "readerCount must be at least 1, got \(configuration.readerCount)")
        }
        // RETURNING (3.35) writes a group's events in one statement; Debian 12 ships 3.40.
        guard sqlite3_libversion_number() >= 3_035_000 else {
            throw StoreError(
                code: .configuration,
                message: "SQLite \(String(cString: sqlite3_libversion())) is too old: 3.35 or later is required")
        }
        try Self.createParentDirectory(of: configuration.path)
        // An in-memory or URI-named database has no file to guard (nor a directory to lock in).
        let isFile =
            !configuration.path.isEmpty && configuration.path != ":memory:" && !configuration.path.hasPrefix("file:")
        fileLock = configuration.exclusive && isFile ? try DatabaseFileLock(databasePath: configuration.path) : nil
        let writer = try SQLiteConnection.open(path: configuration.path)
        try Self.configure(writer, configuration)
        let outcome = try MigrationRunner.migrate(writer, migrations: migrations)
        // Commits should not pay for checkpoints: `checkpoint()` runs them on another
        // connection (the server calls it every second). SQLite's own automatic checkpoint
        // stays as a fallback, at ten times its default size.
        try writer.execute("PRAGMA wal_autocheckpoint=10000")
        // A burst of writes grows the WAL; once checkpointed, the next write starts it over and
        // cuts the file back to this size, instead of keeping the burst's size for ever.
        try writer.execute("PRAGMA journal_size_limit=\(Self.walSizeLimit)")
        let checkpointer = try SQLiteConnection.open(path: configuration.path)
        try Self.configure(checkpointer, configuration)
        var readers: [SQLiteConnection] = []
        for _ in 0..<configuration.readerCount {
            let reader = try SQLiteConnection.open(path: configuration.path, readOnly: true)
            try Self.configure(reader, configuration)
            readers.append(reader)
        }
        self.configuration = configuration
        self.migratedVersion = outcome.version
        self.appliedMigrations = outcome.applied
        self.writer = ConfinedConnection(connection: writer)
        self.checkpointer = ConfinedConnection(connection: checkpointer)
        // A serial queue runs on an overcommit thread of its own; on Linux the global concurrent
        // queue's threads are the ones Swift's cooperative pool uses, so blocking work must not go there.
        self.writerQueue = DispatchQueue(label: "switchboard.store.writer")
        self.writerQueue.setSpecific(key: writerQueueKey, value: Self.writerQueueMarker)
        self.readers = ReaderPool(connections: readers)
    }

    /// Runs `body` on the writer connection inside `BEGIN IMMEDIATE … COMMIT` and returns its result.
    ///
    /// Writes run one at a time, in call order, on a dedicated serial queue. When `body` throws,
    /// the transaction is rolled back and the error is rethrown unchanged. A failing `COMMIT`
    /// also rolls back and throws a ``StoreError``.
    ///
    /// `afterCommit`, when given, runs on the writer queue right after a successful `COMMIT` and
    /// before the next write starts, so successive calls see commits in commit order (the server
    /// wakes event waiters there). It must be quick and must not touch the database.
    @discardableResult
    public func write<T: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws -> T, afterCommit: (@Sendable (T) -> Void)? = nil
    ) async throws -> T {
        try checkOpen()
        let writer = self.writer
        return try await withCheckedThrowingContinuation { continuation in
            writerQueue.async {
                let result = Result { try writer.connection.inTransaction(begin: "BEGIN IMMEDIATE", body) }
                if case .success(let value) = result { afterCommit?(value) }
                continuation.resume(with: result)
            }
        }
    }

    /// Runs `body` like ``write(_:afterCommit:)`` but blocks the calling thread until it
    /// committed: for start-up, before anything serves.
    public func writeNow<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try checkOpen()
        let writer = self.writer
        return try writerQueue.sync { try writer.connection.inTransaction(begin: "BEGIN IMMEDIATE", body) }
    }

    /// Runs `body` on a reader connection inside one read transaction and returns its result, so
    /// all its statements see the same snapshot.
    ///
    /// Reads run concurrently with each other and with the writer. When every reader is busy the
    /// call waits (suspended) for one. Reader connections are read-only: a write inside `body`
    /// fails with ``StoreError/Code/readOnly``.
    ///
    /// `onReaderQueue` keeps this read on the reader's queue even when the configuration runs
    /// reads on the caller's thread: for a read that may scan (a report over a whole table).
    @discardableResult
    public func read<T: Sendable>(
        onReaderQueue: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        try checkOpen()
        let reader = try await readers.acquire()
        let readers = self.readers
        if configuration.readsOnCallerThread, !onReaderQueue {
            let result = Result { try reader.connection.connection.inTransaction(begin: "BEGIN", body) }
            readers.release(reader)
            return try result.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            reader.queue.async {
                let result = Result { try reader.connection.connection.inTransaction(begin: "BEGIN", body) }
                readers.release(reader)
                continuation.resume(with: result)
            }
        }
    }

    /// Writes a consistent copy of the database to `path` (SQLite's `VACUUM INTO`: one
    /// snapshot, compacted), on a reader connection; the writer goes on meanwhile.
    public func vacuum(into path: String) throws {
        try checkOpen()
        let reader = try SQLiteConnection.open(path: configuration.path, readOnly: true)
        defer { reader.close() }
        try Self.configure(reader, configuration)
        _ = try reader.query("VACUUM INTO ?1", [.text(path)])
    }

    /// The bytes the WAL file is cut back to when it starts over after a checkpoint.
    public static let walSizeLimit = 8 << 20

    /// Copies what the WAL holds into the database file without blocking readers or the writer
    /// (`PRAGMA wal_checkpoint(PASSIVE)`), on a connection and thread of its own. Returns the
    /// WAL's size and how much of it is now checkpointed, in pages.
    @discardableResult
    public func checkpoint() async throws -> (walPages: Int, checkpointed: Int) {
        try checkOpen()
        let checkpointer = self.checkpointer
        return try await withCheckedThrowingContinuation { continuation in
            checkpointQueue.async {
                continuation.resume(
                    with: Result {
                        let row = try checkpointer.connection.query("PRAGMA wal_checkpoint(PASSIVE)").first
                        return (try row?.int("log") ?? 0, try row?.int("checkpointed") ?? 0)
                    })
            }
        }
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { closedFlag.isClosed }

    /// Closes every connection; idempotent. Later `read`/`write` calls throw ``StoreError/Code/closed``.
    ///
    /// Writes already queued finish first (this call waits for them); reads in flight finish and
    /// their connections close as they return. Called from inside a `write` body, the writer
    /// closes right after that body's transaction.
    public func close() {
        guard closedFlag.close() else { return }
        readers.close()
        let checkpointer = self.checkpointer
        checkpointQueue.sync { checkpointer.connection.close() }
        let writer = self.writer
        if DispatchQueue.getSpecific(key: writerQueueKey) == Self.writerQueueMarker {
            writerQueue.async { writer.connection.close() }
        } else {
            writerQueue.sync { writer.connection.close() }
        }
        fileLock?.release()
    }

    private func checkOpen() throws { try closedFlag.checkOpen() }

    // MARK: - Opening

    /// Marks the writer queue, so `close()` can tell it is running on it (and must not `sync`).
    private static let writerQueueMarker = 1

    /// Creates the database's directory and its missing parents; a failure says which
    /// directory, why in plain words, and as which user.
    private static func createParentDirectory(of path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var made = ""
        for part in directory.split(separator: "/", omittingEmptySubsequences: true) {
            made += (made.isEmpty && !directory.hasPrefix("/") ? "" : "/") + part
            var status = stat()
            if stat(made, &status) == 0 {
                guard status.st_mode & S_IFMT == S_IFDIR else {
                    throw StoreError(
                        code: .io,
                        message: "cannot use the data directory \(directory): \(made) is a file, not a directory")
                }
                continue
            }
            if mkdir(made, 0o755) != 0, errno != EEXIST {
                let reason = DatabaseFileLock.describe(errno)
                throw StoreError(code: .io, message: "cannot create \(made): \(reason) for user \(currentUserName())")
            }
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            let reason = DatabaseFileLock.describe(errno)
            throw StoreError(
                code: .io,
                message: "cannot write in the data directory \(directory): \(reason) for user \(currentUserName())")
        }
    }

    /// The name of the user this process runs as (its uid when it has no name).
    private static func currentUserName() -> String {
        let uid = geteuid()
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return String(cString: name)
    }

    /// Applies the per-connection settings; WAL mode is verified, not assumed.
    private static func configure(_ connection: SQLiteConnection, _ configuration: DatabaseConfiguration) throws {
        try connection.setBusyTimeout(configuration.busyTimeout)
        let mode = try connection.query("PRAGMA journal_mode=WAL").first?.optionalString("journal_mode")
        guard mode?.lowercased() == "wal" else {
            throw StoreError(
                code: .configuration,
                message:
                    "WAL mode did not take effect on \(configuration.path) (journal_mode is \(mode ?? "unknown")); an in-memory or unsupported file system cannot be used"
            )
        }
        // Each connection keeps up to 8 MiB of pages (SQLite's default is 2 MiB): a write of
        // thousands of event rows touches as many index pages, and re-reading them per write
        // grew its cost with the table.
        try connection.execute(
            "PRAGMA synchronous=\(configuration.synchronous.rawValue); PRAGMA foreign_keys=ON; PRAGMA cache_size=-8192;"
        )
    }
}

/// The key under which the writer queue carries ``Database``'s marker.
private let writerQueueKey = DispatchSpecificKey<Int>()
