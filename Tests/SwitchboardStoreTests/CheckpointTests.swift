import Foundation
import Testing
@testable import SwitchboardStore

@Suite("WAL checkpoints off the commit path", .timeLimit(.minutes(3)))
struct CheckpointTests {
    @Test func checkpointCopiesTheWALIntoTheDatabaseWithoutBlockingWrites() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite3")))
            defer { database.close() }
            _ = try await database.write { try $0.execute("CREATE TABLE t (v BLOB)") }
            for _ in 0..<50 {
                _ = try await database.write {
                    try $0.run("INSERT INTO t (v) VALUES (?)", [.blob([UInt8](repeating: 7, count: 4000))])
                }
            }
            let first = try await database.checkpoint()
            #expect(first.walPages > 0)
            #expect(first.checkpointed == first.walPages)
            // Writes go on while checkpoints run, and nothing is lost.
            async let writes: Void = {
                for _ in 0..<50 {
                    _ = try await database.write { try $0.run("INSERT INTO t (v) VALUES (?)", [.blob([1, 2, 3])]) }
                }
            }()
            for _ in 0..<5 { try await database.checkpoint() }
            try await writes
            let count = try await database.read { try $0.query("SELECT count(*) AS n FROM t").first?.int("n") }
            #expect(count == 100)
            let file =
                try FileManager.default.attributesOfItem(atPath: directory.file("db.sqlite3"))[.size] as? Int ?? 0
            #expect(file > 50 * 4000, "the checkpoint must have written the rows into the database file")
        }
    }

    @Test func aBurstsWALIsCutBackOnceCheckpointedAndWrittenAgain() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite3")))
            defer { database.close() }
            _ = try await database.write { try $0.execute("CREATE TABLE t (v BLOB)") }
            // About 16 MiB in one transaction: the WAL grows past the limit.
            _ = try await database.write { connection in
                for _ in 0..<4000 {
                    try connection.run("INSERT INTO t (v) VALUES (?)", [.blob([UInt8](repeating: 9, count: 4096))])
                }
            }
            func walBytes() -> Int {
                (try? FileManager.default.attributesOfItem(atPath: directory.file("db.sqlite3-wal"))[.size] as? Int)
                    ?? 0
            }
            #expect(walBytes() > Database.walSizeLimit)
            // Checkpointed in full (no reader holds an older snapshot), the next write starts the
            // WAL over and cuts the file back.
            var done = false
            for _ in 0..<100 where !done {
                let outcome = try await database.checkpoint()
                done = outcome.checkpointed == outcome.walPages
            }
            #expect(done)
            _ = try await database.write { try $0.run("INSERT INTO t (v) VALUES (?)", [.blob([1])]) }
            #expect(walBytes() <= Database.walSizeLimit, "the WAL kept \(walBytes()) bytes")
        }
    }

    @Test func checkpointAfterCloseThrows() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite3")))
            database.close()
            await #expect(throws: StoreError.self) { try await database.checkpoint() }
        }
    }
}
