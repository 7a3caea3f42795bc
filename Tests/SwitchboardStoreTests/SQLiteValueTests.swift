import SwitchboardStore
import Testing

@Suite("SQLite values", .timeLimit(.minutes(3)))
struct SQLiteValueTests {
    static let values: [SQLiteValue] = [
        .null,
        .integer(0), .integer(-1), .integer(Int64.min), .integer(Int64.max),
        .real(0.5), .real(-1e300), .real(Double.pi), .real(Double.greatestFiniteMagnitude),
        .real(Double.leastNonzeroMagnitude), .real(Double.infinity),
        .text(""), .text("plain"), .text("héllo wörld — 日本語 🎉👩‍👩‍👧"), .text("nul\u{0}inside"),
        .blob([]), .blob([0]), .blob([0, 1, 0, 255, 0]), .blob(Array(0...255)),
    ]

    @Test("every value kind round-trips through a column without affinity", arguments: values)
    func roundTrip(value: SQLiteValue) throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (v)")
        try connection.run("INSERT INTO t (v) VALUES (?)", [value])
        let rows = try connection.query("SELECT v, typeof(v) AS kind FROM t")
        #expect(rows.count == 1)
        #expect(rows.first?[0] == value)
        #expect(try rows.first?.string("kind").uppercased() == value.storageClass)
    }

    @Test("values round-trip through a file database via write and read")
    func roundTripThroughDatabase() async throws {
        try await withDatabase { database, _ in
            try await database.write { try $0.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)") }
            for (index, value) in Self.values.enumerated() {
                try await database.write {
                    try $0.run("INSERT INTO t (id, v) VALUES (?, ?)", [.integer(Int64(index)), value])
                }
            }
            let stored = try await database.read { try $0.query("SELECT v FROM t ORDER BY id").map { $0[0] } }
            #expect(stored == Self.values)
        }
    }

    @Test("Swift values bind through SQLiteValueConvertible")
    func convertibleBindings() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (a, b, c, d, e, f, g)")
        let missing: String? = nil
        let present: String? = "here"
        let bindings: [any SQLiteValueConvertible] = [missing, present, 42, Int64(-7), true, 2.5, [UInt8]([1, 0, 2])]
        try connection.run("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", bindings)
        let row = try #require(try connection.query("SELECT * FROM t").first)
        #expect(
            row.values == [
                .null, .text("here"), .integer(42), .integer(-7), .integer(1), .real(2.5), .blob([1, 0, 2]),
            ])
    }

    @Test("call sites mix Swift values and literals without spelling SQLiteValue")
    func naturalCallSites() throws {
        let connection = try SQLiteConnection.open(path: ":memory:")
        try connection.execute("CREATE TABLE t (name TEXT, age INTEGER)")
        let nickname: String? = nil
        let age = 36
        try connection.run("INSERT INTO t VALUES (?, ?)", [nickname, age])
        try connection.run("INSERT INTO t VALUES (?, ?)", ["ada", 37])
        try connection.run("INSERT INTO t VALUES (?, ?)", [.text("bob"), nil])
        #expect(try connection.query("SELECT count(*) FROM t", []).first?[0] == 3)
        let rows = try connection.query("SELECT name, age FROM t ORDER BY rowid")
        #expect(rows.map(\.values) == [[nil, 36], ["ada", 37], ["bob", nil]])
    }

    @Test("literals build the expected cases")
    func literals() {
        let values: [SQLiteValue] = [nil, 7, 1.5, "text"]
        #expect(values == [.null, .integer(7), .real(1.5), .text("text")])
    }
}
