import Foundation

// AppleFrameworkStubs: the slice of CallKit, PushKit and AVFAudio that SwitchboardCallKit uses,
// with Apple's names, labels, types and raw values, so the adapter type-checks and its mapping
// tests run on Linux. Built only on Linux (the package depends on it with a `.linux` condition).
//
// Members whose names start with `_stub` do not exist in Apple's frameworks: they let tests
// drive the stubs (complete a report, a transaction, read what was recorded). Adapter code must
// never use them; it would not compile against the real frameworks.

/// A value behind an `NSLock`, for the stubs' records: the adapter may call a stub from any
/// thread (as it may call CallKit), while a test reads the records from its own.
final class StubRecords<Value> {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}
