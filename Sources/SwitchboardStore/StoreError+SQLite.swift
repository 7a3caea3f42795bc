import CSQLite

// The one choke point where SQLite result codes become typed errors.

extension StoreError.Code {
    /// Maps an SQLite primary result code (the low byte of a result code) to a stable category.
    init(sqlitePrimaryCode primary: Int32) {
        switch primary {
        case SQLITE_ERROR: self = .sql
        case SQLITE_BUSY: self = .busy
        case SQLITE_LOCKED: self = .locked
        case SQLITE_CONSTRAINT: self = .constraint
        case SQLITE_CORRUPT, SQLITE_NOTADB: self = .corrupt
        case SQLITE_FULL: self = .full
        case SQLITE_READONLY: self = .readOnly
        case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM: self = .io
        case SQLITE_MISUSE, SQLITE_RANGE: self = .misuse
        case SQLITE_MISMATCH: self = .typeMismatch
        default: self = .unknown(primary)
        }
    }
}

extension StoreError {
    /// Builds the error for a failed SQLite call that returned `resultCode` on connection `db`.
    ///
    /// The connection's extended code and message are used when they describe this failure
    /// (same primary code); otherwise the generic text for `resultCode`.
    init(resultCode: Int32, db: OpaquePointer?, sql: String?) {
        var extended = resultCode
        var message: String
        if let db, sqlite3_extended_errcode(db) & 0xFF == resultCode & 0xFF {
            extended = sqlite3_extended_errcode(db)
            message = String(cString: sqlite3_errmsg(db))
        } else {
            message = String(cString: sqlite3_errstr(resultCode))
        }
        if message.isEmpty { message = "SQLite error \(resultCode)" }
        self.init(
            code: Code(sqlitePrimaryCode: extended & 0xFF), message: message, sql: sql,
            extendedCode: extended)
    }
}

/// Throws a ``StoreError`` unless `resultCode` is `SQLITE_OK`.
@inline(__always)
func checkSQLite(_ resultCode: Int32, _ db: OpaquePointer?, sql: String? = nil) throws {
    guard resultCode == SQLITE_OK else {
        throw StoreError(resultCode: resultCode, db: db, sql: sql)
    }
}
