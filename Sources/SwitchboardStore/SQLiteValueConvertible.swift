/// A Swift type that can be bound as an SQLite parameter.
///
/// Lets call sites bind ordinary Swift values without spelling the enum case:
/// ```swift
/// let name: String? = nil
/// try connection.run("UPDATE users SET nickname = ? WHERE id = ?", [name, 42])
/// ```
public protocol SQLiteValueConvertible: Sendable {
    /// The value to bind.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteValueConvertible {
    /// The value itself.
    public var sqliteValue: SQLiteValue { self }
}

extension String: SQLiteValueConvertible {
    /// `.text(self)`.
    public var sqliteValue: SQLiteValue { .text(self) }
}

extension Int: SQLiteValueConvertible {
    /// `.integer(self)`.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Int64: SQLiteValueConvertible {
    /// `.integer(self)`.
    public var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int32: SQLiteValueConvertible {
    /// `.integer(self)`.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Bool: SQLiteValueConvertible {
    /// `.integer(1)` for `true`, `.integer(0)` for `false` (SQLite has no boolean class).
    public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Double: SQLiteValueConvertible {
    /// `.real(self)`.
    public var sqliteValue: SQLiteValue { .real(self) }
}

extension Array: SQLiteValueConvertible where Element == UInt8 {
    /// `.blob(self)`.
    public var sqliteValue: SQLiteValue { .blob(self) }
}

extension Optional: SQLiteValueConvertible where Wrapped: SQLiteValueConvertible {
    /// The wrapped value, or `.null` for `nil`.
    public var sqliteValue: SQLiteValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.sqliteValue
        }
    }
}
