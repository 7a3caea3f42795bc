import CSQLite

/// One prepared SQLite statement (`sqlite3_stmt`), owned by this object and finalized in `deinit`.
///
/// Get one from ``SQLiteConnection/prepare(_:)``, which caches statements by SQL text. Every use
/// binds the given values, steps to the end, then resets the statement and clears its bindings,
/// so a cached statement is always ready for the next caller:
/// ```swift
/// let insert = try connection.prepare("INSERT INTO users (name) VALUES (?)")
/// for name in names { try insert.run([.text(name)]) }
/// ```
/// Like its connection, a statement belongs to one thread at a time and is not `Sendable`.
public final class SQLiteStatement {
    /// The SQL text this statement was prepared from.
    public let sql: String
    private var handle: OpaquePointer?
    /// The owning connection. `sqlite3_close_v2` keeps it alive while this statement is unfinalized.
    private let db: OpaquePointer
    /// Set while rows are being produced, so a re-entrant use gets its own statement.
    private(set) var isInUse = false

    /// Prepares exactly one statement; trailing whitespace and comments are allowed, a second statement is not.
    init(db: OpaquePointer, sql: String, persistent: Bool) throws {
        self.db = db
        self.sql = sql
        var handle: OpaquePointer?
        var trailing: String = ""
        let flags = UInt32(persistent ? SQLITE_PREPARE_PERSISTENT : 0)
        let resultCode = sql.withCString { base -> Int32 in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(db, base, -1, flags, &handle, &tail)
            if code == SQLITE_OK, let tail, tail.pointee != 0 { trailing = String(cString: tail) }
            return code
        }
        try checkSQLite(resultCode, db, sql: sql)
        guard let handle else {
            throw StoreError(code: .misuse, message: "the SQL contains no statement", sql: sql)
        }
        self.handle = handle
        if try Self.containsStatement(trailing, db: db) {
            throw StoreError(
                code: .misuse,
                message: "prepare accepts one statement; use execute(_:) for several", sql: sql)
        }
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Finalizes now; later uses throw ``StoreError/Code/closed``.
    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    /// The number of `?` (or named) parameters the statement expects.
    public var parameterCount: Int {
        handle.map { Int(sqlite3_bind_parameter_count($0)) } ?? 0
    }

    /// Runs the statement and returns every result row.
    public func query(_ bindings: [SQLiteValue] = []) throws -> [SQLiteRow] {
        var rows: [SQLiteRow] = []
        try forEachRow(bindings) { rows.append($0) }
        return rows
    }

    /// Runs the statement to completion and returns the number of rows it inserted, updated or
    /// deleted (`sqlite3_changes64`; for other statements the value is not meaningful).
    @discardableResult
    public func run(_ bindings: [SQLiteValue] = []) throws -> Int {
        try forEachRow(bindings) { _ in }
        return Int(sqlite3_changes64(db))
    }

    /// Runs the statement and calls `body` for each row as it is produced, without collecting them.
    public func forEachRow(_ bindings: [SQLiteValue] = [], _ body: (SQLiteRow) throws -> Void) throws {
        guard let handle else { throw StoreError.closed("statement") }
        isInUse = true
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            isInUse = false
        }
        try bind(bindings, to: handle)
        var columns: SQLiteColumns?
        while true {
            let resultCode = sqlite3_step(handle)
            switch resultCode {
            case SQLITE_ROW:
                let names = columns ?? Self.columns(of: handle)
                columns = names
                try body(SQLiteRow(columns: names, values: Self.values(of: handle, count: names.names.count)))
            case SQLITE_DONE:
                return
            default:
                throw StoreError(resultCode: resultCode, db: db, sql: sql)
            }
        }
    }

    // MARK: - Binding

    private func bind(_ values: [SQLiteValue], to handle: OpaquePointer) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw StoreError(
                code: .misuse, message: "the statement expects \(expected) parameters, got \(values.count)",
                sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try checkSQLite(Self.bind(value, at: Int32(offset + 1), to: handle), db, sql: sql)
        }
    }

    private static func bind(_ value: SQLiteValue, at index: Int32, to handle: OpaquePointer) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            return sqlite3_bind_double(handle, index, real)
        case .text(var text):
            // Bind with an explicit byte length so embedded NULs survive. An empty string must
            // still get a non-null pointer: a null pointer would bind NULL instead of ''.
            return text.withUTF8 { utf8 -> Int32 in
                guard let base = utf8.baseAddress, !utf8.isEmpty else {
                    return sqlite3_bind_text64(handle, index, "", 0, switchboard_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
                return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                    sqlite3_bind_text64(
                        handle, index, $0, UInt64(utf8.count), switchboard_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            // A null pointer would bind NULL, so an empty blob is bound as a zero-length zeroblob.
            guard !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return bytes.withUnsafeBytes {
                sqlite3_bind_blob64(handle, index, $0.baseAddress, UInt64($0.count), switchboard_sqlite_transient())
            }
        }
    }

    // MARK: - Reading

    private static func columns(of handle: OpaquePointer) -> SQLiteColumns {
        let count = sqlite3_column_count(handle)
        return SQLiteColumns(
            names: (0..<count).map { index in
                sqlite3_column_name(handle, index).map { String(cString: $0) } ?? ""
            })
    }

    private static func values(of handle: OpaquePointer, count: Int) -> [SQLiteValue] {
        (0..<Int32(count)).map { value(of: handle, at: $0) }
    }

    private static func value(of handle: OpaquePointer, at index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            // sqlite3_column_text first, then sqlite3_column_bytes, as the SQLite docs advise.
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let bytes = sqlite3_column_blob(handle, index)
            let count = Int(sqlite3_column_bytes(handle, index))
            guard let bytes, count > 0 else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            return .null
        }
    }

    /// Whether `text` (the remainder after the first statement) holds another statement;
    /// whitespace, comments and bare semicolons do not count.
    private static func containsStatement(_ text: String, db: OpaquePointer) throws -> Bool {
        guard text.contains(where: { !$0.isWhitespace && $0 != ";" }) else { return false }
        return try text.withCString { start -> Bool in
            var cursor = start
            while cursor.pointee != 0 {
                var handle: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let resultCode = sqlite3_prepare_v2(db, cursor, -1, &handle, &tail)
                sqlite3_finalize(handle)
                try checkSQLite(resultCode, db, sql: text)
                guard handle == nil else { return true }
                guard let tail, tail != cursor else { return false }
                cursor = tail
            }
            return false
        }
    }
}
