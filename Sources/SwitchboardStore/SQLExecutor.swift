/// What a repository needs from a connection inside a transaction or snapshot: statements
/// with positional parameters, rows back. The embedded SQLite connection and PostgreSQL
/// (``PostgresExecutor``) both implement it, so one repository serves both stores.
///
/// Parameters are written SQLite's way, `?` or `?N` (a bare `?` is one more than the largest
/// number so far); PostgreSQL gets them as `$N`. Values and rows are ``SQLiteValue`` and
/// ``SQLiteRow`` on both: the five storage classes every column here fits (PostgreSQL's
/// integers, booleans and numerics come back as integers, `bytea` as a blob). Failures are
/// ``StoreError``s with the same codes and constraint kinds on both.
public protocol SQLExecutor: AnyObject {
    /// Which SQL the connection speaks, for the few statements that differ.
    var dialect: SQLDialect { get }
    /// Runs one statement and returns all result rows.
    func query(_ sql: String, _ bindings: [SQLiteValue]) throws -> [SQLiteRow]
    /// Runs one statement and returns the number of rows it changed.
    @discardableResult
    func run(_ sql: String, _ bindings: [SQLiteValue]) throws -> Int
    /// Runs one statement and hands each result row to `body` as it comes, without collecting
    /// them (SQLite steps its statement; a store that receives whole results walks them).
    func forEachRow(_ sql: String, _ bindings: [SQLiteValue], _ body: (SQLiteRow) throws -> Void) throws
}

extension SQLExecutor {
    public func forEachRow(_ sql: String, _ bindings: [SQLiteValue], _ body: (SQLiteRow) throws -> Void) throws {
        for row in try query(sql, bindings) { try body(row) }
    }
}

/// The SQL a store speaks where SQLite and PostgreSQL differ.
public enum SQLDialect: Sendable, Hashable {
    case sqlite, postgres

    /// The column that keeps rows in insertion order in tables that say so (SQLite's `rowid`;
    /// PostgreSQL's tables have a `seq` column for it).
    public var insertionOrder: String {
        switch self {
        case .sqlite: "rowid"
        case .postgres: "seq"
        }
    }

    /// What a `SELECT` that claims rows ends with: PostgreSQL locks them and passes over rows
    /// another transaction holds (`FOR UPDATE SKIP LOCKED`); SQLite's writer is alone anyway.
    public var lockingRowsSkippingLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE SKIP LOCKED"
        }
    }

    /// The larger of several values, as a scalar function (`max(a, b)` in SQLite).
    public var greatest: String {
        switch self {
        case .sqlite: "max"
        case .postgres: "greatest"
        }
    }

    /// A table of the elements of the JSON array of text in `parameter`, with columns `value`
    /// (the text) and `key` (its position, for `ORDER BY key`).
    public func jsonTextArray(_ parameter: String) -> String {
        switch self {
        case .sqlite: "json_each(\(parameter))"
        case .postgres: "json_array_elements_text(CAST(\(parameter) AS json)) WITH ORDINALITY AS elements(value, key)"
        }
    }
}

extension SQLiteConnection: SQLExecutor {
    public var dialect: SQLDialect { .sqlite }
}

/// Tells a unique violation by the index or constraint it names, on either store: SQLite names
/// the columns (`calls.scope_kind, calls.scope_id`), PostgreSQL the index.
extension StoreError {
    /// Whether this is a unique (or primary key) violation whose message names any of `names`.
    public func isUniqueViolation(naming names: String...) -> Bool {
        guard constraint == .unique || constraint == .primaryKey else { return false }
        return names.contains { message.contains($0) }
    }
}
