/// Where a ``Database`` lives and how its connections are set up.
///
/// ```swift
/// let configuration = DatabaseConfiguration(path: "/var/lib/switchboard/switchboard.sqlite")
/// ```
public struct DatabaseConfiguration: Sendable, Hashable {
    /// How hard SQLite syncs to disk (`PRAGMA synchronous`).
    public enum Synchronous: String, Sendable, Hashable {
        /// `NORMAL`: in WAL mode a commit appends to the write-ahead log without `fsync`; the log
        /// is synced at each checkpoint.
        ///
        /// Safe against application crashes: a committed transaction is in the operating system's
        /// page cache once `COMMIT` returns, so a crash, `kill -9` or restart of the server loses
        /// nothing and never corrupts the database. On power loss or an operating-system crash,
        /// the last transactions committed since the previous checkpoint may be rolled back, but
        /// the database stays consistent: it reopens at an earlier, intact state. That trade buys
        /// one fewer `fsync` per write transaction.
        case normal = "NORMAL"
        /// `FULL`: every commit syncs the write-ahead log, so committed transactions also survive
        /// power loss, at the cost of an `fsync` per write transaction.
        case full = "FULL"
    }

    /// The database file path; its parent directory is created if missing.
    public var path: String
    /// How many read-only connections serve ``Database/read(_:)`` concurrently (at least 1).
    public var readerCount: Int
    /// How long a statement waits for a lock held by another connection before failing with
    /// ``StoreError/Code/busy``.
    public var busyTimeout: Duration
    /// The sync level; see ``Synchronous/normal`` for why it is the default.
    public var synchronous: Synchronous
    /// Whether ``Database/read(_:)`` runs its body on the calling thread (once a reader is
    /// free) instead of on the reader's own queue. It saves two thread switches per read
    /// (the hop there and back), which is most of a point lookup's cost; it suits callers whose
    /// read bodies only query (the server's event loops, where reads are indexed lookups and
    /// bounded pages). Off by default: a body that blocks (waits on a semaphore) would block
    /// the caller's thread, which the cooperative pool cannot spare.
    public var readsOnCallerThread: Bool
    /// Whether this open holds the database's lock file (one server per database): on for a
    /// server; off for a tool that only reads a database a server may hold (a copy, a backup).
    public var exclusive: Bool = true

    /// Creates a configuration with defaults: 4 readers, 5 s busy timeout, `synchronous=NORMAL`,
    /// reads on the readers' queues.
    public init(
        path: String, readerCount: Int = 4, busyTimeout: Duration = .seconds(5),
        synchronous: Synchronous = .normal, readsOnCallerThread: Bool = false
    ) {
        self.path = path
        self.readerCount = readerCount
        self.busyTimeout = busyTimeout
        self.synchronous = synchronous
        self.readsOnCallerThread = readsOnCallerThread
    }
}
