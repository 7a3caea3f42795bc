/// A ``PostgresConnection`` as an ``SQLExecutor``: SQLite-style parameters become `$N`,
/// ``SQLiteValue``s go as PostgreSQL values and come back as such, and ``PostgresError``s
/// become ``StoreError``s with the same codes and constraint kinds SQLite's would have.
public final class PostgresExecutor: SQLExecutor {
    /// The connection statements run on.
    public let connection: PostgresConnection
    public var dialect: SQLDialect { .postgres }

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    public func query(_ sql: String, _ bindings: [SQLiteValue]) throws -> [SQLiteRow] {
        let result = try execute(sql, bindings)
        guard let first = result.rows.first else { return [] }
        let columns = SQLiteColumns(names: first.columns)
        return result.rows.map { row in SQLiteRow(columns: columns, values: row.values.map(Self.sqliteValue)) }
    }

    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue]) throws -> Int {
        try execute(sql, bindings).affectedRows
    }

    private func execute(_ sql: String, _ bindings: [SQLiteValue]) throws(StoreError) -> PostgresResult {
        // The connection keeps the translations: an executor lasts one transaction.
        let text: String
        if let cached = connection.translatedSQL[sql] {
            text = cached
        } else {
            text = Self.dollarParameters(sql)
            connection.translatedSQL[sql] = text
        }
        do {
            return try connection.execute(text, bindings.map(Self.postgresValue))
        } catch {
            throw Self.storeError(error)
        }
    }

    /// `?` and `?N` as `$N` (a bare `?` is one more than the largest number so far, as in
    /// SQLite), outside string literals and quoted names.
    static func dollarParameters(_ sql: String) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 8)
        var largest = 0
        var quote: Character?
        var characters = sql.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            if let open = quote {
                output.append(character)
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                output.append(character)
            case "?":
                var digits = ""
                while let next = pending, next.isASCII, next.isNumber {
                    digits.append(next)
                    pending = characters.next()
                }
                let number = Int(digits) ?? largest + 1
                largest = max(largest, number)
                output += "$\(number)"
            default:
                output.append(character)
            }
        }
        return output
    }

    static func postgresValue(_ value: SQLiteValue) -> PostgresValue {
        switch value {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .text(let text): .text(text)
        case .blob(let bytes): .bytes(bytes)
        }
    }

    static func sqliteValue(_ value: PostgresValue) -> SQLiteValue {
        switch value {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .boolean(let flag): .integer(flag ? 1 : 0)
        case .text(let text): .text(text)
        case .bytes(let bytes): .blob(bytes)
        }
    }

    /// The ``StoreError`` for a PostgreSQL failure: constraint classes by SQLSTATE, a lost
    /// transaction (serialization failure, deadlock) as ``StoreError/Code/busy``, a failed
    /// connection as ``StoreError/Code/io``.
    public static func storeError(_ error: PostgresError) -> StoreError {
        let code: StoreError.Code
        var constraint: StoreError.ConstraintKind?
        switch error.sqlState {
        case "23505":
            code = .constraint
            constraint = .unique
        case "23503":
            code = .constraint
            constraint = .foreignKey
        case "23502":
            code = .constraint
            constraint = .notNull
        case "23514":
            code = .constraint
            constraint = .check
        case let state where state.hasPrefix("23"):
            code = .constraint
            constraint = .other
        case _ where error.isRetryable: code = .busy
        case "25006": code = .readOnly
        case "53100": code = .full
        case let state where state.hasPrefix("22"): code = .typeMismatch
        case let state where state.hasPrefix("42"): code = .sql
        case _ where error.isConnectionFailure: code = .io
        default: code = .unknown(0)
        }
        let message =
            error.constraint.map { error.message.contains($0) ? error.message : "\(error.message) (\($0))" }
            ?? error.message
        return StoreError(
            code: code, message: message, sql: error.sql, sqlState: error.sqlState, constraint: constraint)
    }
}
