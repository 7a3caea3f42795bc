import Glibc

/// A failed system call, with the call's name and `errno`.
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    /// The call that failed.
    public let call: String
    /// The `errno` value.
    public let errno: Int32
    /// `strerror` text.
    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The one choke point for system calls: retries `EINTR`, turns -1 into a typed error.
@discardableResult
func systemCall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw SystemCallError(call: name, errno: code)
    }
}

/// Nanoseconds on the monotonic clock.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

extension Duration {
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
