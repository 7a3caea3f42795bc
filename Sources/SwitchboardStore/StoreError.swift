/// A storage failure with a stable ``Code`` that the server maps to an HTTP error.
///
/// Errors from SQLite keep the extended result code, SQLite's own message and the (truncated)
/// SQL that failed, so a log line is enough to find the cause:
/// ```swift
/// do {
///     try await database.write { try $0.run("INSERT INTO users (name) VALUES (?)", [name]) }
/// } catch let error as StoreError where error.constraint == .unique {
///     // 409 Conflict
/// }
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The stable category of a storage failure, mapped from SQLite's primary result code.
    public enum Code: Sendable, Hashable, CustomStringConvertible {
        /// The database file is locked by another connection (`SQLITE_BUSY`) and the busy timeout ran out.
        case busy
        /// A table is locked within the same process (`SQLITE_LOCKED`).
        case locked
        /// A constraint failed (`SQLITE_CONSTRAINT`); see ``StoreError/constraint`` for which kind.
        case constraint
        /// The file is not a database or is damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
        case corrupt
        /// The disk or the database is full (`SQLITE_FULL`).
        case full
        /// A write was attempted on a read-only database or connection (`SQLITE_READONLY`).
        case readOnly
        /// The operating system reported an I/O, permission or open failure
        /// (`SQLITE_IOERR`, `SQLITE_CANTOPEN`, `SQLITE_PERM`).
        case io
        /// The API was used wrongly: a bad parameter count, an empty statement, a missing column
        /// (`SQLITE_MISUSE`, `SQLITE_RANGE`, or detected by this module).
        case misuse
        /// A value had another type than the caller expected, or was `NULL` where a value was required.
        case typeMismatch
        /// SQL that SQLite rejected: a syntax error, an unknown table or column (`SQLITE_ERROR`).
        case sql
        /// Migrations could not be applied, or the database schema is newer than this build.
        case migration
        /// The database could not be configured as required (for example WAL mode did not take effect).
        case configuration
        /// The connection or database was closed before the call.
        case closed
        /// Any other SQLite primary result code.
        case unknown(Int32)

        /// A stable lowercase name, suitable as an error code string (`"constraint"`, `"unknown"`).
        public var name: String {
            switch self {
            case .busy: "busy"
            case .locked: "locked"
            case .constraint: "constraint"
            case .corrupt: "corrupt"
            case .full: "full"
            case .readOnly: "read_only"
            case .io: "io"
            case .misuse: "misuse"
            case .typeMismatch: "type_mismatch"
            case .sql: "sql"
            case .migration: "migration"
            case .configuration: "configuration"
            case .closed: "closed"
            case .unknown: "unknown"
            }
        }

        /// The ``name``, with the SQLite code for ``unknown(_:)``.
        public var description: String {
            if case .unknown(let code) = self { return "unknown(\(code))" }
            return name
        }
    }

    /// Which constraint a ``Code/constraint`` error violated, from SQLite's extended result code.
    public enum ConstraintKind: String, Sendable, Hashable {
        /// A `UNIQUE` constraint or unique index (`SQLITE_CONSTRAINT_UNIQUE`).
        case unique
        /// A `PRIMARY KEY` or rowid collision (`SQLITE_CONSTRAINT_PRIMARYKEY`, `SQLITE_CONSTRAINT_ROWID`).
        case primaryKey
        /// A `FOREIGN KEY` reference (`SQLITE_CONSTRAINT_FOREIGNKEY`).
        case foreignKey
        /// A `NOT NULL` column (`SQLITE_CONSTRAINT_NOTNULL`).
        case notNull
        /// A `CHECK` constraint (`SQLITE_CONSTRAINT_CHECK`).
        case check
        /// Any other constraint (triggers, datatype, virtual tables).
        case other
    }

    /// The stable category.
    public let code: Code
    /// SQLite's extended result code (for example 2067 for `SQLITE_CONSTRAINT_UNIQUE`); 0 when the
    /// error did not come from SQLite.
    public let extendedCode: Int32
    /// A human-readable message: SQLite's `sqlite3_errmsg` text, or this module's explanation.
    public let message: String
    /// The SQL that failed, truncated to ``maximumSQLLength`` characters; `nil` when not applicable.
    public let sql: String?

    /// How many characters of SQL an error keeps.
    public static let maximumSQLLength = 200

    /// PostgreSQL's SQLSTATE for an error from PostgreSQL (`23505`), otherwise nil.
    public let sqlState: String?
    /// The constraint kind PostgreSQL's SQLSTATE gave (SQLite's comes from ``extendedCode``).
    private let stateConstraint: ConstraintKind?

    /// Creates an error; the SQL is truncated to ``maximumSQLLength`` characters.
    public init(code: Code, message: String, sql: String? = nil, extendedCode: Int32 = 0) {
        self.code = code
        self.message = message
        self.sql = sql.map(Self.truncated)
        self.extendedCode = extendedCode
        sqlState = nil
        stateConstraint = nil
    }

    /// An error from PostgreSQL: `constraint` is the kind its SQLSTATE names, for a
    /// ``Code/constraint`` error.
    init(code: Code, message: String, sql: String?, sqlState: String, constraint: ConstraintKind?) {
        self.code = code
        self.message = message
        self.sql = sql.map(Self.truncated)
        extendedCode = 0
        self.sqlState = sqlState
        stateConstraint = constraint
    }

    /// The violated constraint for a ``Code/constraint`` error, otherwise `nil`.
    public var constraint: ConstraintKind? {
        guard code == .constraint else { return nil }
        if sqlState != nil { return stateConstraint ?? .other }
        // Extended constraint codes are SQLITE_CONSTRAINT | (n << 8); see sqlite3.h.
        switch extendedCode >> 8 {
        case 8: return .unique  // SQLITE_CONSTRAINT_UNIQUE
        case 6, 10: return .primaryKey  // SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_ROWID
        case 3: return .foreignKey  // SQLITE_CONSTRAINT_FOREIGNKEY
        case 5: return .notNull  // SQLITE_CONSTRAINT_NOTNULL
        case 1: return .check  // SQLITE_CONSTRAINT_CHECK
        default: return .other
        }
    }

    /// `code`, extended code, message and SQL on one line, for logs.
    public var description: String {
        var text = "StoreError(\(code)"
        if extendedCode != 0 { text += ", sqlite \(extendedCode)" }
        if let sqlState { text += ", postgres \(sqlState)" }
        text += "): \(message)"
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }

    private static func truncated(_ sql: String) -> String {
        guard sql.count > maximumSQLLength else { return sql }
        return String(sql.prefix(maximumSQLLength)) + "…"
    }
}

extension StoreError {
    /// The error every call on a closed connection or database throws.
    static func closed(_ what: String = "database") -> StoreError {
        StoreError(code: .closed, message: "the \(what) is closed")
    }
}
