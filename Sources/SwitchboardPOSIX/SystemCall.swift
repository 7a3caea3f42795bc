import Glibc

/// A failed system call, with the call's name (and context) and `errno`.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call that failed, with context (`"bind 127.0.0.1:2197"`).
    public let call: String
    /// The `errno` value.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// `"<call>: <strerror text> (errno N)"`.
    public var description: String { "\(call): \(describeErrno(errno))" }
}

/// The one choke point for system calls: retries `EINTR`, turns -1 into a typed error.
@discardableResult
public func systemCall<T: FixedWidthInteger>(
    _ name: @autoclosure () -> String, _ body: () -> T
) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw SystemCallError(call: name(), errno: code)
    }
}

/// `strerror` text with the number, e.g. "Connection refused (errno 111)".
public func describeErrno(_ code: Int32) -> String {
    "\(String(cString: strerror(code))) (errno \(code))"
}

/// Nanoseconds on the monotonic clock.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Seconds on the monotonic clock.
@inline(__always)
public func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) * 1e-9 }

/// Names the calling thread as the kernel shows it (`top -H`, `perf`, `/proc/…/comm`), at most
/// 15 bytes. Foundation's `Thread.name` does not get there on Linux, and `pthread_setname_np`
/// is not visible to Swift; writing `/proc/thread-self/comm` is the same call. Best effort.
public func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
