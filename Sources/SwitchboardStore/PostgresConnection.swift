import CLibPQ
import Foundation

/// A value bound to or read from PostgreSQL. Parameters go as text except bytes (binary); a
/// result column becomes the case its type says (`int2/4/8` → integer, `bool`, `bytea` →
/// bytes, anything else text).
public enum PostgresValue: Sendable, Hashable {
    case null
    case text(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case bytes([UInt8])
}

/// One row of a result, by column name.
public struct PostgresRow: Sendable {
    public let columns: [String]
    public let values: [PostgresValue]

    public subscript(name: String) -> PostgresValue? {
        columns.firstIndex(of: name).map { values[$0] }
    }

    public func string(_ name: String) throws(PostgresError) -> String {
        guard case .text(let text)? = self[name] else { throw PostgresError.typeMismatch(name, self[name]) }
        return text
    }

    public func optionalString(_ name: String) throws(PostgresError) -> String? {
        switch self[name] {
        case .null?: nil
        case .text(let text)?: text
        case let other: throw PostgresError.typeMismatch(name, other)
        }
    }

    public func int64(_ name: String) throws(PostgresError) -> Int64 {
        guard case .integer(let value)? = self[name] else { throw PostgresError.typeMismatch(name, self[name]) }
        return value
    }

    public func bool(_ name: String) throws(PostgresError) -> Bool {
        guard case .boolean(let value)? = self[name] else { throw PostgresError.typeMismatch(name, self[name]) }
        return value
    }
}

/// What a statement answered: its rows and, for INSERT/UPDATE/DELETE, how many rows it touched.
public struct PostgresResult: Sendable {
    public let rows: [PostgresRow]
    public let affectedRows: Int
    /// The command tag (`INSERT 0 1`, `COMMIT`; `ROLLBACK` for a `COMMIT` of a failed transaction).
    public var command: String = ""
}

/// A failure from PostgreSQL or libpq, with the server's SQLSTATE when it sent one.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE (`23505` unique violation, `40001` serialization failure,
    /// `40P01` deadlock); empty for a client-side failure (no connection, a bad URL).
    public let sqlState: String
    public let message: String
    /// The statement, truncated to 200 characters; nil when not applicable.
    public let sql: String?
    /// The constraint or index a constraint violation names (`calls_live_per_scope`), else nil.
    public let constraint: String?

    public init(sqlState: String = "", message: String, sql: String? = nil, constraint: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql.map { $0.count > 200 ? String($0.prefix(200)) + "…" : $0 }
        self.constraint = constraint
    }

    /// The connection itself failed (closed, broken, unreachable): no SQLSTATE from a server,
    /// or class 08 (connection exception).
    public var isConnectionFailure: Bool { sqlState.isEmpty || sqlState.hasPrefix("08") || sqlState == "57P01" }

    /// A unique constraint or index was violated.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// A prepared statement whose tables changed shape since it was prepared (`0A000`, "cached
    /// plan must not change result type"): preparing it again fixes it.
    public var isStalePlan: Bool { sqlState == "0A000" && message.contains("cached plan") }

    /// The transaction lost to a concurrent one (a serialization failure, a deadlock, a lock
    /// wait past `lock_timeout`) or met a stale prepared statement, and may simply be run again.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" || sqlState == "55P03" || isStalePlan }

    public var description: String {
        var text = "PostgresError(" + (sqlState.isEmpty ? "client" : sqlState) + "): \(message)"
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }

    static func typeMismatch(_ column: String, _ value: PostgresValue?) -> PostgresError {
        PostgresError(message: "column '\(column)' is \(value.map { "\($0)" } ?? "missing"), not the type asked for")
    }
}

/// How a transaction isolates itself from concurrent ones.
public enum PostgresIsolation: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

/// One libpq connection, used by one thread at a time (it is not shared; a pool hands
/// connections out). Statements take `$1, $2, …` parameters, bound as typed values, never
/// spliced into the SQL. The connection string's password never appears in an error.
///
public final class PostgresConnection {
    private var handle: OpaquePointer?

    /// What every connection gets unless its URL says otherwise: a bounded connect, and TCP
    /// keepalives, so a peer that vanished (a partition, a paused VM) is noticed in about 30 s
    /// instead of the kernel's two hours.
    public static let defaultParameters: KeyValuePairs<String, String> = [
        "connect_timeout": "10", "keepalives": "1", "keepalives_idle": "15", "keepalives_interval": "5",
        "keepalives_count": "3",
    ]

    /// Connects to `url` (`postgresql://user@host:port/db`, or key=value pairs; a unix socket
    /// directory as `host`), with ``defaultParameters`` and `parameters` (libpq keywords) where
    /// the URL sets nothing else. Throws with libpq's reason when it cannot, the URL's
    /// password never in it.
    public init(url: String, parameters: [String: String] = [:]) throws(PostgresError) {
        var keywords: [String] = [], values: [String] = []
        for (keyword, value) in Self.defaultParameters where parameters[keyword] == nil {
            keywords.append(keyword)
            values.append(value)
        }
        for (keyword, value) in parameters.sorted(by: { $0.key < $1.key }) {
            keywords.append(keyword)
            values.append(value)
        }
        // The URL last: expanded (expand_dbname), its own settings win over the defaults before it.
        keywords.append("dbname")
        values.append(url)
        let connection: OpaquePointer? = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let connection else { throw PostgresError(message: "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw PostgresError(message: "cannot connect to PostgreSQL: \(PostgresURL.scrub(reason, of: url))")
        }
        handle = connection
    }

    deinit { close() }

    /// The libpq connection, for this module's own protocol work (``PostgresListener``).
    var rawHandle: OpaquePointer? { handle }

    /// Whether the connection is still usable (not closed, not broken).
    public var isOpen: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Runs one statement with `parameters` for `$1, $2, …`, as a statement this connection
    /// prepared the first time it ran this SQL text (parsed and planned once per connection).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        guard let handle else { throw PostgresError(message: "the connection is closed", sql: sql) }
        let name = try preparedName(for: sql, handle)
        // Text for every parameter but bytes, which go binary; nil is SQL NULL.
        var buffers: [[UInt8]?] = []
        var formats: [Int32] = []
        buffers.reserveCapacity(parameters.count)
        for parameter in parameters {
            switch parameter {
            case .null:
                buffers.append(nil)
                formats.append(0)
            case .text(let text):
                buffers.append(Array(text.utf8) + [0])
                formats.append(0)
            case .integer(let value):
                buffers.append(Array(String(value).utf8) + [0])
                formats.append(0)
            case .real(let value):
                buffers.append(Array("\(value)".utf8) + [0])
                formats.append(0)
            case .boolean(let value):
                buffers.append(Array((value ? "t" : "f").utf8) + [0])
                formats.append(0)
            case .bytes(let bytes):
                buffers.append(bytes.isEmpty ? [0] : bytes)
                formats.append(1)  // a non-nil pointer, length 0
            }
        }
        let lengths = parameters.map { parameter -> Int32 in
            if case .bytes(let bytes) = parameter { return Int32(bytes.count) }
            return 0  // text parameters end at their NUL
        }
        let result: OpaquePointer? = withPointers(to: buffers) { values in
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0)
        }
        guard let result else { throw failure(handle, sql: sql) }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PostgresResult(
                rows: Self.rows(of: result), affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0,
                command: String(cString: PQcmdStatus(result)))
        default:
            let error = Self.error(of: result, sql: sql)
            // Another instance changed a table under this prepared statement (a migration added
            // a column): forget it, so the transaction's retry prepares it afresh.
            if error.isStalePlan { prepared[sql] = nil }
            throw error
        }
    }

    /// Statements prepared on this connection, by SQL text.
    private var prepared: [String: String] = [:]
    /// ``PostgresExecutor``'s `$N` text by SQLite-style text, kept as long as the connection.
    var translatedSQL: [String: String] = [:]
    /// Names are never reused: a forgotten statement may still exist on the server.
    private var preparedCount = 0

    private func preparedName(for sql: String, _ handle: OpaquePointer) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        preparedCount += 1
        let name = "sb\(preparedCount)"
        guard let result = PQprepare(handle, name, sql, 0, nil) else { throw failure(handle, sql: sql) }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw Self.error(of: result, sql: sql) }
        prepared[sql] = name
        return name
    }

    /// libpq's reason for a call that returned no result (the connection failed).
    private func failure(_ handle: OpaquePointer, sql: String?) -> PostgresError {
        let reason = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(message: reason.isEmpty ? "the connection to PostgreSQL failed" : reason, sql: sql)
    }

    private static func error(of result: OpaquePointer, sql: String?) -> PostgresError {
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(sqlState: field("C") ?? "", message: message, sql: sql, constraint: field("n"))
    }

    /// Reconnects a connection that failed, with the parameters it was opened with; the
    /// statements it had prepared are gone with the old session. Throws when it cannot.
    public func reset() throws(PostgresError) {
        guard let handle else { throw PostgresError(message: "the connection is closed") }
        prepared = [:]
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else { throw failure(handle, sql: nil) }
    }

    /// Runs a script of several statements without parameters (a migration), in the
    /// transaction that is open, if any.
    public func executeScript(_ sql: String) throws(PostgresError) {
        guard let handle else { throw PostgresError(message: "the connection is closed", sql: sql) }
        guard let result = PQexec(handle, sql) else { throw failure(handle, sql: sql) }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
        default: throw Self.error(of: result, sql: sql)
        }
    }

    /// Runs `body` in one transaction at `isolation`: committed when it returns, rolled back
    /// when it (or the commit) throws. A retryable failure (``PostgresError/isRetryable``) is
    /// the caller's to run again.
    public func transaction<T>(
        _ isolation: PostgresIsolation = .readCommitted, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        try execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        do {
            let value = try body(self)
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    private static func rows(of result: OpaquePointer) -> [PostgresRow] {
        let columnCount = PQnfields(result), rowCount = PQntuples(result)
        guard rowCount > 0 else { return [] }
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        return (0..<rowCount).map { row in
            let values = (0..<columnCount).map { column -> PostgresValue in
                if PQgetisnull(result, row, column) == 1 { return .null }
                let text = String(cString: PQgetvalue(result, row, column))
                switch types[Int(column)] {
                case 20, 21, 23: return Int64(text).map(PostgresValue.integer) ?? .text(text)  // int8, int2, int4
                case 1700:
                    return Int64(text).map(PostgresValue.integer) ?? Double(text).map(PostgresValue.real) ?? .text(text)  // numeric
                case 700, 701: return Double(text).map(PostgresValue.real) ?? .text(text)  // float4, float8
                case 16: return .boolean(text == "t")  // bool
                case 17: return .bytes(Self.bytes(fromHex: text))  // bytea, text format \x…
                default: return .text(text)
                }
            }
            return PostgresRow(columns: columns, values: values)
        }
    }

    /// bytea's text output (`\x` and two hex digits a byte).
    private static func bytes(fromHex text: String) -> [UInt8] {
        let digits = Array(text.utf8.dropFirst(2))
        func value(_ digit: UInt8) -> UInt8 { digit <= 57 ? digit &- 48 : (digit | 0x20) &- 87 }
        return stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }
}

/// Calls `body` with C pointers to each buffer (nil for nil), valid for the call.
private func withPointers<R>(to buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafePointer<CChar>?] = []
    pointers.reserveCapacity(buffers.count)
    func next(_ index: Int) -> R {
        guard index < buffers.count else { return body(pointers) }
        guard let buffer = buffers[index] else {
            pointers.append(nil)
            return next(index + 1)
        }
        return buffer.withUnsafeBufferPointer { raw in
            pointers.append(raw.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) })
            return next(index + 1)
        }
    }
    return next(0)
}

/// PostgreSQL connection strings as they may be shown: the password replaced by `***`, in
/// both forms (`postgresql://user:secret@host/db`, `password=secret` in key=value pairs or a
/// URI's query).
public enum PostgresURL {
    public static func redacted(_ url: String) -> String {
        var text = url
        // Back to front, so the earlier ranges stay valid.
        for range in passwordRanges(in: url).reversed() { text.replaceSubrange(range, with: "***") }
        return text
    }

    /// `message` (libpq's, which may quote parts of the URL) with the URL's password replaced:
    /// where a password stands (the whole URL, a URI's `:password@`, a `password=` value), and
    /// anywhere else when it is 6 characters or longer. A shorter one is not hunted through the
    /// rest of the text, where it would mask innocent words (`/var/run/p…`).
    public static func scrub(_ message: String, of url: String) -> String {
        var text = message.replacingOccurrences(of: url, with: redacted(url))
        for secret in passwords(in: url) {
            if secret.count >= 6 {
                text = text.replacingOccurrences(of: secret, with: "***")
                continue
            }
            for (before, after) in [(":", "@"), ("password=", ""), ("password='", "'"), ("password = ", "")] {
                text = text.replacingOccurrences(of: before + secret + after, with: before + "***" + after)
            }
        }
        return text
    }

    /// The password text(s) a connection string holds, as written (percent-encoded or not).
    static func passwords(in url: String) -> [String] {
        passwordRanges(in: url).map { String(url[$0]).trimmingCharacters(in: CharacterSet(charactersIn: "'")) }.filter {
            !$0.isEmpty
        }
    }

    /// Where the passwords are, in order and apart: a URI's `user:password@`, and the value of
    /// every `password=` (a URI's query or a key=value pair; libpq allows spaces around `=`,
    /// and a value in single quotes, with `\'` inside).
    static func passwordRanges(in url: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var searchFrom = url.startIndex
        if let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
            let colon = url[scheme.upperBound..<at].firstIndex(of: ":")
        {
            ranges.append(url.index(after: colon)..<at)
            searchFrom = at
        }
        func skipSpaces(_ index: inout String.Index) {
            while index < url.endIndex, url[index] == " " { index = url.index(after: index) }
        }
        while let keyword = url.range(of: "password", range: searchFrom..<url.endIndex) {
            var index = keyword.upperBound
            skipSpaces(&index)
            guard index < url.endIndex, url[index] == "=" else {
                searchFrom = keyword.upperBound
                continue
            }
            index = url.index(after: index)
            skipSpaces(&index)
            let start = index
            if index < url.endIndex, url[index] == "'" {
                index = url.index(after: index)
                while index < url.endIndex, url[index] != "'" || url[url.index(before: index)] == "\\" {
                    index = url.index(after: index)
                }
                if index < url.endIndex { index = url.index(after: index) }
            } else {
                while index < url.endIndex, url[index] != "&", url[index] != " " { index = url.index(after: index) }
            }
            if start < index { ranges.append(start..<index) }
            searchFrom = index
        }
        return ranges
    }
}

/// Calls `body` with a NULL-terminated array of C strings, valid for the call.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
