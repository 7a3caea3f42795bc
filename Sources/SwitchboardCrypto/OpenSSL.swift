internal import CCrypto

/// The one choke point where OpenSSL return codes become ``CryptoError``s.
///
/// Call these immediately after the OpenSSL function, on the same thread: OpenSSL's error queue is
/// thread-local, and building the error drains it so a later failure does not report stale entries.
enum OpenSSL {
    /// Throws unless `result` is 1, OpenSSL's success value for the functions this module calls.
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(CryptoError) {
        guard result == 1 else { throw failure(operation()) }
    }

    /// Returns `value`, or throws if OpenSSL returned `NULL`.
    static func nonNull<T>(_ value: T?, _ operation: @autoclosure () -> String) throws(CryptoError) -> T {
        guard let value else { throw failure(operation()) }
        return value
    }

    /// Builds an error from (and empties) this thread's OpenSSL error queue, oldest entry first.
    static func failure(_ operation: String) -> CryptoError {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            let capacity = 256
            var buffer = [CChar](repeating: 0, count: capacity)
            ERR_error_string_n(code, &buffer, capacity)
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            messages.append(String(decoding: bytes, as: UTF8.self))
        }
        let detail = messages.isEmpty ? "OpenSSL reported no error detail" : messages.joined(separator: "; ")
        return CryptoError(code: .library, operation: operation, detail: detail)
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with a pointer that is never `NULL`, even for an empty array.
    ///
    /// Some OpenSSL functions treat a `NULL` buffer as "no buffer given" (or reject it) even when
    /// the length is 0; an empty Swift array may hand out a `nil` base address.
    func withNonNullBytes<R>(_ body: (UnsafeRawPointer, Int) throws -> R) rethrows -> R {
        if isEmpty {
            var placeholder: UInt8 = 0
            return try Swift.withUnsafeBytes(of: &placeholder) { try body($0.baseAddress!, 0) }
        }
        return try withUnsafeBytes { try body($0.baseAddress!, $0.count) }
    }
}
