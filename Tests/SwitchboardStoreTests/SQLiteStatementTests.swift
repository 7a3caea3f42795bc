import SwitchboardStore
import Testing

@Suite("Prepared statements", .timeLimit(.minutes(3)))
struct SQLiteStatementTests {
    @Test("the same SQL run 1,000 times with different bindings reuses one statement and gives the right results")
    func reuse() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL)")
        let insert = "INSERT INTO t (id, name, score) VALUES (?, ?, ?)"
        let select = "SELECT name, score FROM t WHERE id = ?"
        let first = try connection.prepare(insert)
        for id in 1...1_000 {
            #expect(try connection.run(insert, [.integer(Int64(id)), .text("name-\(id)"), .real(Double(id) / 4)]) == 1)
        }
        for id in 1...1_000 {
            let rows = try connection.query(select, [.integer(Int64(id))])
            #expect(rows.count == 1)
            #expect(try rows.first?.string("name") == "name-\(id)")
            #expect(try rows.first?.double("score") == Double(id) / 4)
        }
        #expect(try connection.prepare(insert) === first)
        #expect(try connection.query("SELECT count(*) FROM t").first?[0] == .integer(1_000))
        #expect(try connection.query(select, [.integer(1_001)]).isEmpty)
    }

    @Test("a statement that failed is reset and works on the next use")
    func reuseAfterFailure() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        let insert = "INSERT INTO t (id) VALUES (?)"
        try connection.run(insert, [1])
        #expect(throws: StoreError.self) { try connection.run(insert, [1]) }
        #expect(try connection.run(insert, [2]) == 1)
        #expect(try connection.query("SELECT id FROM t ORDER BY id").map { $0[0] } == [.integer(1), .integer(2)])
    }

    @Test("a statement abandoned mid-iteration is reset, so its next use starts from the first row")
    func resetAfterAbandonedIteration() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1), (2), (3);")
        let sql = "SELECT id FROM t WHERE id >= ? ORDER BY id"
        #expect(throws: MarkerError(id: 1)) {
            try connection.prepare(sql).forEachRow([1]) { _ in throw MarkerError(id: 1) }
        }
        #expect(try connection.query(sql, [2]).map { $0[0] } == [2, 3])
    }

    @Test("the cache stays bounded and evicted statements still work")
    func cacheEviction() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        for value in 0..<200 {
            #expect(try connection.query("SELECT \(value) AS v").first?[0] == .integer(Int64(value)))
        }
        #expect(try connection.query("SELECT 0 AS v").first?[0] == .integer(0))
    }

    @Test("a re-entrant use of the same SQL while rows are produced gets its own statement")
    func reentrantUse() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1), (2), (3);")
        let sql = "SELECT id FROM t WHERE id >= ? ORDER BY id"
        var pairs: [[SQLiteValue]] = []
        try connection.prepare(sql).forEachRow([1]) { outer in
            let inner = try connection.query(sql, [outer[0]]).map { $0[0] }
            pairs.append(inner)
        }
        #expect(pairs == [[1, 2, 3], [2, 3], [3]])
    }

    @Test("wrong parameter counts and multiple statements are rejected as misuse")
    func misuse() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        let tooFew = try #require(throws: StoreError.self) { try connection.query("SELECT ?, ?", [1]) }
        #expect(tooFew.code == .misuse)
        #expect(tooFew.sql == "SELECT ?, ?")
        let two = try #require(throws: StoreError.self) { try connection.prepare("SELECT 1; SELECT 2") }
        #expect(two.code == .misuse)
        let empty = try #require(throws: StoreError.self) { try connection.prepare("  -- nothing") }
        #expect(empty.code == .misuse)
        #expect(try connection.query("SELECT 1 AS one; -- trailing comment").first?[0] == .integer(1))
    }

    @Test("a syntax error is an .sql error carrying SQLite's message and the SQL")
    func syntaxError() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        let error = try #require(throws: StoreError.self) { try connection.query("SELEC 1") }
        #expect(error.code == .sql)
        #expect(error.message.contains("syntax error"))
        #expect(error.sql == "SELEC 1")
        #expect(error.description.contains("SELEC 1"))
    }

    @Test("lastInsertRowID reports the inserted rowid")
    func lastInsertRowID() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
        try connection.run("INSERT INTO t (id, v) VALUES (41, 'a')")
        try connection.run("INSERT INTO t (v) VALUES ('b')")
        #expect(connection.lastInsertRowID == 42)
    }

    @Test("a closed connection throws .closed and closing twice is fine")
    func closedConnection() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        let statement = try connection.prepare("SELECT 1")
        connection.close()
        connection.close()
        #expect(connection.isClosed)
        let error = try #require(throws: StoreError.self) { try connection.query("SELECT 1") }
        #expect(error.code == .closed)
        let statementError = try #require(throws: StoreError.self) { try statement.query() }
        #expect(statementError.code == .closed)
    }
}
