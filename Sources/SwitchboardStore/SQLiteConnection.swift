import CSQLite

/// One SQLite connection (`sqlite3*`), owned by this object and closed in `deinit` or ``close()``.
///
/// A connection belongs to one thread at a time, so it is not `Sendable`; ``Database`` hands
/// connections to `read`/`write` bodies and keeps them confined. Statements are prepared once per
/// SQL text and cached:
/// ```swift
/// let connection = try SQLiteConnection.open(path: path)
/// try connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
/// try connection.run("INSERT INTO users (name) VALUES (?)", ["ada"])
/// let rows = try connection.query("SELECT id, name FROM users WHERE name = ?", ["ada"])
/// ```
public final class SQLiteConnection {
    /// The path the connection was opened with.
    public let path: String
    private var handle: OpaquePointer?
    private var cache: [String: CachedStatement] = [:]
    private var useCounter: UInt64 = 0

    /// How many prepared statements a connection keeps; the least recently used one is dropped first.
    static let statementCacheCapacity = 64

    private struct CachedStatement {
        let statement: SQLiteStatement
        var lastUse: UInt64
    }

    private init(path: String, handle: OpaquePointer) {
        self.path = path
        self.handle = handle
    }

    /// Opens (and for read-write, creates if missing) the database at `path`.
    ///
    /// `":memory:"` opens a private in-memory database. Result codes are extended, so a
    /// ``StoreError`` carries e.g. `SQLITE_CONSTRAINT_UNIQUE` rather than `SQLITE_CONSTRAINT`.
    public static func open(path: String, readOnly: Bool = false) throws -> SQLiteConnection {
        // NOMUTEX: a connection is never used by two threads at once (it is not Sendable, and
        // Database confines each one), so SQLite's per-connection mutex would be pure overhead.
        let access = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let flags = access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        var handle: OpaquePointer?
        let resultCode = sqlite3_open_v2(path, &handle, flags, nil)
        guard resultCode == SQLITE_OK, let handle else {
            let error = StoreError(resultCode: resultCode, db: handle, sql: nil)
            sqlite3_close_v2(handle)
            throw StoreError(
                code: error.code, message: "cannot open \(path): \(error.message)",
                extendedCode: error.extendedCode)
        }
        sqlite3_extended_result_codes(handle, 1)
        return SQLiteConnection(path: path, handle: handle)
    }

    deinit {
        close()
    }

    /// Finalizes every cached statement, then closes the connection; calling it again does nothing.
    ///
    /// Later calls on this connection throw ``StoreError/Code/closed``.
    public func close() {
        guard let handle else { return }
        for entry in cache.values { entry.statement.finalize() }
        cache.removeAll()
        // close_v2 never fails on a valid handle: a statement still held elsewhere makes the
        // connection a zombie that is freed when that statement is finalized.
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { handle == nil }

    /// The rowid of the most recent successful `INSERT` on this connection (0 if none).
    public var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Whether a transaction is open (the connection is not in autocommit mode).
    public var isInTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// Runs one or more `;`-separated statements that return no rows (schema changes, pragmas
    /// that set values). Statements are not cached.
    public func execute(_ sql: String) throws {
        let db = try openHandle()
        try checkSQLite(sqlite3_exec(db, sql, nil, nil, nil), db, sql: sql)
    }

    /// Returns the cached prepared statement for `sql`, preparing and caching it on first use.
    ///
    /// `sql` must hold exactly one statement.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        let db = try openHandle()
        useCounter &+= 1
        if let entry = cache[sql] {
            cache[sql]?.lastUse = useCounter
            return entry.statement
        }
        let statement = try SQLiteStatement(db: db, sql: sql, persistent: true)
        if cache.count >= Self.statementCacheCapacity,
            let oldest = cache.min(by: { $0.value.lastUse < $1.value.lastUse })
        {
            // Not finalized here: a caller may still hold it; its deinit finalizes it.
            cache.removeValue(forKey: oldest.key)
        }
        cache[sql] = CachedStatement(statement: statement, lastUse: useCounter)
        return statement
    }

    /// Runs one statement with positional bindings and returns all result rows.
    public func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> [SQLiteRow] {
        try statement(for: sql).query(bindings)
    }

    /// Runs one statement with positional bindings and hands each result row to `body` as it
    /// is stepped, without collecting them.
    public func forEachRow(_ sql: String, _ bindings: [SQLiteValue], _ body: (SQLiteRow) throws -> Void) throws {
        try statement(for: sql).forEachRow(bindings, body)
    }

    /// Runs one statement, binding any ``SQLiteValueConvertible`` Swift values, and returns all result rows.
    public func query(_ sql: String, _ bindings: [any SQLiteValueConvertible]) throws -> [SQLiteRow] {
        try query(sql, bindings.map(\.sqliteValue))
    }

    /// Runs one statement with positional bindings and returns the number of changed rows.
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int {
        try statement(for: sql).run(bindings)
    }

    /// Runs one statement, binding any ``SQLiteValueConvertible`` Swift values, and returns the
    /// number of changed rows.
    @discardableResult
    public func run(_ sql: String, _ bindings: [any SQLiteValueConvertible]) throws -> Int {
        try run(sql, bindings.map(\.sqliteValue))
    }

    /// The number of statements currently cached (for tests).
    var cachedStatementCount: Int { cache.count }

    /// Sets how long a statement waits for a lock held by another connection before failing with
    /// ``StoreError/Code/busy``.
    func setBusyTimeout(_ timeout: Duration) throws {
        let db = try openHandle()
        let (seconds, attoseconds) = timeout.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        try checkSQLite(sqlite3_busy_timeout(db, Int32(clamping: max(0, milliseconds))), db)
    }

    /// The cached statement, or a fresh one when the cached one is producing rows for a caller
    /// further up the stack (re-entrant use from a `forEachRow` body).
    private func statement(for sql: String) throws -> SQLiteStatement {
        let cached = try prepare(sql)
        guard cached.isInUse else { return cached }
        return try SQLiteStatement(db: try openHandle(), sql: sql, persistent: false)
    }

    private func openHandle() throws -> OpaquePointer {
        guard let handle else { throw StoreError.closed("connection") }
        return handle
    }
}

extension SQLiteConnection {
    /// Runs `body` inside a transaction opened with `begin` (`"BEGIN"` or `"BEGIN IMMEDIATE"`),
    /// commits when it returns and rolls back when it (or the commit) throws; the body's error is
    /// rethrown unchanged.
    func inTransaction<T>(begin: String, _ body: (SQLiteConnection) throws -> T) throws -> T {
        try run(begin)
        let value: T
        do {
            value = try body(self)
            try run("COMMIT")
        } catch {
            rollBackIfNeeded()
            throw error
        }
        return value
    }

    /// Rolls back an open transaction; SQLite may already have rolled back after some errors.
    private func rollBackIfNeeded() {
        guard isInTransaction else { return }
        // A failing ROLLBACK leaves nothing better to do; the original error is the one to report.
        _ = try? run("ROLLBACK")
    }
}
