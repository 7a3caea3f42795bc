/// One SQLite value: the five storage classes a column can hold.
///
/// Literals build values directly, so bindings read naturally:
/// ```swift
/// try connection.run("INSERT INTO users (name, age, note) VALUES (?, ?, ?)", ["ada", 36, nil])
/// ```
public enum SQLiteValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double. SQLite stores NaN as `NULL`, so NaN does not round-trip.
    case real(Double)
    /// UTF-8 text; embedded NUL characters are kept.
    case text(String)
    /// Raw bytes; an empty blob stays an empty blob (not `NULL`).
    case blob([UInt8])

    /// Whether this value is SQL `NULL`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The SQLite name of the storage class (`INTEGER`, `REAL`, `TEXT`, `BLOB`, `NULL`), used in error messages.
    public var storageClass: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    /// Creates `.null` from `nil`.
    public init(nilLiteral: ()) {
        self = .null
    }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    /// Creates `.integer` from an integer literal.
    public init(integerLiteral value: Int64) {
        self = .integer(value)
    }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    /// Creates `.real` from a floating-point literal.
    public init(floatLiteral value: Double) {
        self = .real(value)
    }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    /// Creates `.text` from a string literal.
    public init(stringLiteral value: String) {
        self = .text(value)
    }
}

extension SQLiteValue: CustomStringConvertible {
    /// A short, SQL-like rendering for logs and test output (blobs show their size only).
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        case .blob(let bytes): "<blob \(bytes.count) bytes>"
        }
    }
}
