import Foundation
import SwitchboardStore

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-store-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a fresh temporary directory and removes it afterwards.
func withTemporaryDirectory<T>(_ body: (TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try await body(directory)
}

/// Opens a database in a fresh temporary directory, runs `body`, then closes it and removes the directory.
func withDatabase<T>(
    readerCount: Int = 4, readsOnCallerThread: Bool = false, migrations: [Migration] = [],
    _ body: (Database, TemporaryDirectory) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { directory in
        let database = try Database(
            configuration: DatabaseConfiguration(
                path: directory.file("test.sqlite"), readerCount: readerCount, readsOnCallerThread: readsOnCallerThread),
            migrations: migrations)
        defer { database.close() }
        return try await body(database, directory)
    }
}

/// How long a test waits for what normally takes milliseconds (a semaphore another thread signals
/// at once): a bound for a deadlock on a loaded machine, never a timing assertion.
let generousWait: Double = 60

/// Waits for a semaphore on a thread of its own, so a test never blocks the cooperative pool.
///
/// A serial queue gets its own (overcommit) thread; `DispatchQueue.global()` would not do: on
/// Linux its threads are the ones Swift's cooperative pool runs on.
func wait(for semaphore: DispatchSemaphore, seconds: Double = generousWait) async -> Bool {
    await withCheckedContinuation { continuation in
        DispatchQueue(label: "switchboard.store.tests.wait").async {
            continuation.resume(returning: semaphore.wait(timeout: .now() + seconds) == .success)
        }
    }
}

/// An error type the tests throw from bodies to check it comes back unchanged.
struct MarkerError: Error, Equatable {
    let id: Int
}

/// Reads the first column of the first row as an integer.
func scalar(_ connection: SQLiteConnection, _ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int64 {
    guard let row = try connection.query(sql, bindings).first, case .integer(let value) = row[0] else {
        throw StoreError(code: .typeMismatch, message: "no integer result for \(sql)")
    }
    return value
}
