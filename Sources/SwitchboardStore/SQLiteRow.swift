/// The column names of one result set, shared by all of its rows.
final class SQLiteColumns: Sendable {
    /// Names in result order.
    let names: [String]
    /// The first index of each name (a join can repeat a name; the first one wins).
    let indexByName: [String: Int]

    init(names: [String]) {
        self.names = names
        var indexByName: [String: Int] = [:]
        for (index, name) in names.enumerated() where indexByName[name] == nil {
            indexByName[name] = index
        }
        self.indexByName = indexByName
    }
}

/// One result row: values by column index or by column name, with typed accessors.
///
/// Typed accessors throw a ``StoreError`` with code ``StoreError/Code/typeMismatch`` that names
/// the column when the stored value has another type, or is `NULL` where a value is required:
/// ```swift
/// for row in try connection.query("SELECT id, name, nickname FROM users") {
///     let id = try row.int64("id")
///     let name = try row.string("name")
///     let nickname = try row.optionalString("nickname")
/// }
/// ```
public struct SQLiteRow: Sendable {
    private let columns: SQLiteColumns
    /// The values in column order.
    public let values: [SQLiteValue]

    init(columns: SQLiteColumns, values: [SQLiteValue]) {
        self.columns = columns
        self.values = values
    }

    /// The column names in result order.
    public var columnNames: [String] { columns.names }

    /// The value at a column index; traps when the index is out of range, like an array.
    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of the first column with this exact name, or `nil` when there is no such column.
    public subscript(name: String) -> SQLiteValue? {
        columns.indexByName[name].map { values[$0] }
    }

    /// The value of a named column; throws ``StoreError/Code/misuse`` when there is no such column.
    public func value(_ name: String) throws -> SQLiteValue {
        guard let index = columns.indexByName[name] else {
            throw StoreError(
                code: .misuse,
                message: "no column named '\(name)' in the result (columns: \(columns.names.joined(separator: ", ")))")
        }
        return values[index]
    }

    /// The text of a non-null `TEXT` column.
    public func string(_ name: String) throws -> String {
        try required(name, expected: "TEXT") { if case .text(let text) = $0 { text } else { nil } }
    }

    /// The case of `T` a non-null `TEXT` column spells. A text that spells none throws
    /// ``StoreError/Code/corrupt``: a stored value is never read as some other one.
    public func value<T: RawRepresentable>(_ name: String, as type: T.Type = T.self) throws -> T
    where T.RawValue == String {
        let text = try string(name)
        guard let value = T(rawValue: text) else {
            throw StoreError(code: .corrupt, message: "column '\(name)' holds '\(text)', which is not a \(T.self)")
        }
        return value
    }

    /// ``value(_:as:)`` for a column that may be `NULL` (then nil).
    public func optionalValue<T: RawRepresentable>(_ name: String, as type: T.Type = T.self) throws -> T?
    where T.RawValue == String {
        try optionalString(name) == nil ? nil : try value(name, as: type)
    }

    /// The text of a `TEXT` column, or `nil` for `NULL`.
    public func optionalString(_ name: String) throws -> String? {
        try optional(name, expected: "TEXT") { if case .text(let text) = $0 { text } else { nil } }
    }

    /// The value of a non-null `INTEGER` column.
    public func int64(_ name: String) throws -> Int64 {
        try required(name, expected: "INTEGER") { if case .integer(let value) = $0 { value } else { nil } }
    }

    /// The value of an `INTEGER` column, or `nil` for `NULL`.
    public func optionalInt64(_ name: String) throws -> Int64? {
        try optional(name, expected: "INTEGER") { if case .integer(let value) = $0 { value } else { nil } }
    }

    /// The value of a non-null `INTEGER` column as `Int`.
    public func int(_ name: String) throws -> Int {
        try required(name, expected: "INTEGER", Self.intValue)
    }

    /// The value of an `INTEGER` column as `Int`, or `nil` for `NULL`.
    public func optionalInt(_ name: String) throws -> Int? {
        try optional(name, expected: "INTEGER", Self.intValue)
    }

    /// A non-null `INTEGER` column as a boolean: 0 is `false`, any other integer is `true`.
    public func bool(_ name: String) throws -> Bool {
        try required(name, expected: "INTEGER (boolean)") {
            if case .integer(let value) = $0 { value != 0 } else { nil }
        }
    }

    /// An `INTEGER` column as a boolean, or `nil` for `NULL`.
    public func optionalBool(_ name: String) throws -> Bool? {
        try optional(name, expected: "INTEGER (boolean)") {
            if case .integer(let value) = $0 { value != 0 } else { nil }
        }
    }

    /// A non-null `REAL` column; an `INTEGER` value is converted.
    public func double(_ name: String) throws -> Double {
        try required(name, expected: "REAL", Self.doubleValue)
    }

    /// A `REAL` column (an `INTEGER` value is converted), or `nil` for `NULL`.
    public func optionalDouble(_ name: String) throws -> Double? {
        try optional(name, expected: "REAL", Self.doubleValue)
    }

    /// The bytes of a non-null `BLOB` column.
    public func blob(_ name: String) throws -> [UInt8] {
        try required(name, expected: "BLOB") { if case .blob(let bytes) = $0 { bytes } else { nil } }
    }

    /// The bytes of a `BLOB` column, or `nil` for `NULL`.
    public func optionalBlob(_ name: String) throws -> [UInt8]? {
        try optional(name, expected: "BLOB") { if case .blob(let bytes) = $0 { bytes } else { nil } }
    }

    // MARK: - Conversion helpers

    private static func intValue(_ value: SQLiteValue) -> Int? {
        if case .integer(let value) = value { Int(exactly: value) } else { nil }
    }

    private static func doubleValue(_ value: SQLiteValue) -> Double? {
        switch value {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    private func required<T>(_ name: String, expected: String, _ convert: (SQLiteValue) -> T?) throws -> T {
        let value = try value(name)
        if value.isNull {
            throw StoreError(
                code: .typeMismatch,
                message:
                    "column '\(name)' is NULL, expected \(expected) (use the optional accessor for a nullable column)")
        }
        guard let converted = convert(value) else { throw mismatch(name, value, expected) }
        return converted
    }

    private func optional<T>(_ name: String, expected: String, _ convert: (SQLiteValue) -> T?) throws -> T? {
        let value = try value(name)
        if value.isNull { return nil }
        guard let converted = convert(value) else { throw mismatch(name, value, expected) }
        return converted
    }

    private func mismatch(_ name: String, _ value: SQLiteValue, _ expected: String) -> StoreError {
        StoreError(code: .typeMismatch, message: "column '\(name)' holds \(value.storageClass), expected \(expected)")
    }
}
