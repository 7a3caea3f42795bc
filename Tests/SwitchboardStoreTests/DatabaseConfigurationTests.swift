import Foundation
import SwitchboardStore
import Testing

@Suite("Database configuration", .timeLimit(.minutes(3)))
struct DatabaseConfigurationTests {
    @Test("a missing data directory is created and every connection is in WAL mode")
    func walAndDirectory() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("nested/data/switchboard.sqlite")
            #expect(!FileManager.default.fileExists(atPath: directory.file("nested")))
            let database = try Database(configuration: DatabaseConfiguration(path: path, readerCount: 2))
            defer { database.close() }
            #expect(FileManager.default.fileExists(atPath: path))
            let writerMode = try await database.write {
                try $0.query("PRAGMA journal_mode").first?.string("journal_mode")
            }
            #expect(writerMode == "wal")
            let readerModes = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await database.read { try $0.query("PRAGMA journal_mode").first?.string("journal_mode") }
                    }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(readerModes == ["wal", "wal"])
            #expect(try await database.write { try scalar($0, "PRAGMA foreign_keys") } == 1)
        }
    }

    @Test(
        "the synchronous setting is applied",
        arguments: [
            (DatabaseConfiguration.Synchronous.normal, Int64(1)), (.full, 2),
        ])
    func synchronous(setting: DatabaseConfiguration.Synchronous, pragmaValue: Int64) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(
                configuration: DatabaseConfiguration(
                    path: directory.file("db.sqlite"), readerCount: 1, synchronous: setting))
            defer { database.close() }
            #expect(try await database.write { try scalar($0, "PRAGMA synchronous") } == pragmaValue)
            #expect(try await database.read { try scalar($0, "PRAGMA synchronous") } == pragmaValue)
        }
    }

    @Test("defaults are 4 readers, 5 s busy timeout and NORMAL")
    func defaults() {
        let configuration = DatabaseConfiguration(path: "x.sqlite")
        #expect(configuration.readerCount == 4)
        #expect(configuration.busyTimeout == .seconds(5))
        #expect(configuration.synchronous == .normal)
    }

    @Test("a database where WAL cannot take effect is refused")
    func inMemoryRefused() throws {
        let error = try #require(throws: StoreError.self) {
            try Database(configuration: DatabaseConfiguration(path: ":memory:"))
        }
        #expect(error.code == .configuration)
        #expect(!FileManager.default.fileExists(atPath: ":memory:.lock"), "an in-memory database has no lock file")
    }

    @Test("zero readers is a configuration error")
    func zeroReaders() async throws {
        try await withTemporaryDirectory { directory in
            let error = try #require(throws: StoreError.self) {
                try Database(configuration: DatabaseConfiguration(path: directory.file("db.sqlite"), readerCount: 0))
            }
            #expect(error.code == .configuration)
        }
    }

    @Test("a path that is not a database is refused as corrupt")
    func notADatabase() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("garbage.sqlite")
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
            let error = try #require(throws: StoreError.self) {
                try Database(configuration: DatabaseConfiguration(path: path))
            }
            #expect(error.code == .corrupt)
        }
    }
}
