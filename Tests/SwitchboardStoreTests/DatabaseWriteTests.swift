import SwitchboardStore
import Testing

@Suite("Database writes and reads", .timeLimit(.minutes(3)))
struct DatabaseWriteTests {
    static let schema = [
        Migration(
            version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
    ]

    @Test("write commits when the body returns")
    func commits() async throws {
        try await withDatabase(migrations: Self.schema) { database, _ in
            let id = try await database.write { connection in
                try connection.run("INSERT INTO items (name) VALUES (?)", ["kept"])
                return connection.lastInsertRowID
            }
            let name = try await database.read {
                try $0.query("SELECT name FROM items WHERE id = ?", [.integer(id)]).first?.string("name")
            }
            #expect(name == "kept")
        }
    }

    @Test("write rolls back when the body throws and rethrows the error unchanged")
    func rollsBack() async throws {
        try await withDatabase(migrations: Self.schema) { database, _ in
            let error = try await #require(throws: MarkerError.self) {
                try await database.write { connection -> Void in
                    try connection.run("INSERT INTO items (name) VALUES (?)", ["discarded"])
                    #expect(connection.isInTransaction)
                    throw MarkerError(id: 17)
                }
            }
            #expect(error == MarkerError(id: 17))
            let count = try await database.read { try scalar($0, "SELECT count(*) FROM items") }
            #expect(count == 0)
            // The writer is usable again, outside any leftover transaction.
            try await database.write { try $0.run("INSERT INTO items (name) VALUES (?)", ["discarded"]) }
            #expect(try await database.read { try scalar($0, "SELECT count(*) FROM items") } == 1)
        }
    }

    @Test("a failed statement inside write rolls back the whole transaction")
    func statementFailureRollsBackEarlierStatements() async throws {
        try await withDatabase(migrations: Self.schema) { database, _ in
            try await database.write { try $0.run("INSERT INTO items (name) VALUES ('a')") }
            let error = try await #require(throws: StoreError.self) {
                try await database.write { connection in
                    try connection.run("INSERT INTO items (name) VALUES ('b')")
                    try connection.run("INSERT INTO items (name) VALUES ('a')")
                }
            }
            #expect(error.constraint == .unique)
            let names = try await database.read {
                try $0.query("SELECT name FROM items ORDER BY name").map { try $0.string("name") }
            }
            #expect(names == ["a"])
        }
    }

    @Test("reader connections refuse writes")
    func readersAreReadOnly() async throws {
        try await withDatabase(migrations: Self.schema) { database, _ in
            let error = try await #require(throws: StoreError.self) {
                try await database.read { try $0.run("INSERT INTO items (name) VALUES ('x')") }
            }
            #expect(error.code == .readOnly)
        }
    }

    @Test("read rolls back its transaction when the body throws and the reader stays usable")
    func readThrows() async throws {
        try await withDatabase(readerCount: 1, migrations: Self.schema) { database, _ in
            await #expect(throws: MarkerError(id: 3)) {
                try await database.read { connection -> Int in
                    _ = try connection.query("SELECT count(*) FROM items")
                    throw MarkerError(id: 3)
                }
            }
            try await database.write { try $0.run("INSERT INTO items (name) VALUES ('fresh')") }
            // A reader left inside its old transaction would still see the old snapshot (0 rows).
            #expect(try await database.read { try scalar($0, "SELECT count(*) FROM items") } == 1)
        }
    }
}
