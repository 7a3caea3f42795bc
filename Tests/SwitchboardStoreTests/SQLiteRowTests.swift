import SwitchboardStore
import Testing

@Suite("Typed row accessors", .timeLimit(.minutes(3)))
struct SQLiteRowTests {
    /// One row: id INTEGER, name TEXT, nickname NULL, score REAL, avatar BLOB, active INTEGER 0.
    static func sampleRow() throws -> SQLiteRow {
        let connection = try SQLiteConnection.open(path: ":memory:")
        let rows = try connection.query(
            "SELECT 7 AS id, 'ada' AS name, NULL AS nickname, 2.5 AS score, x'00ff' AS avatar, 0 AS active")
        return try #require(rows.first)
    }

    @Test("accessors return stored values of the right type")
    func values() throws {
        let row = try Self.sampleRow()
        #expect(try row.int64("id") == 7)
        #expect(try row.int("id") == 7)
        #expect(try row.string("name") == "ada")
        #expect(try row.optionalString("nickname") == nil)
        #expect(try row.optionalString("name") == "ada")
        #expect(try row.optionalInt64("nickname") == nil)
        #expect(try row.double("score") == 2.5)
        #expect(try row.double("id") == 7)
        #expect(try row.blob("avatar") == [0, 255])
        #expect(try row.bool("active") == false)
        #expect(try row.bool("id") == true)
        #expect(row.columnNames == ["id", "name", "nickname", "score", "avatar", "active"])
        #expect(row["name"] == .text("ada"))
        #expect(row["missing"] == nil)
        #expect(row[0] == .integer(7))
    }

    private enum Mood: String { case ada, calm }

    /// A stored text that spells a case reads as it; one that spells none is an error (never a
    /// default), and NULL is nil only for the optional accessor.
    @Test("stored enum values parse or fail, never default")
    func enumValues() throws {
        let row = try Self.sampleRow()
        #expect(try row.value("name", as: Mood.self) == .ada)
        #expect(try row.optionalValue("nickname", as: Mood.self) == nil)
        let connection = try SQLiteConnection.open(path: ":memory:")
        let stranger = try #require(try connection.query("SELECT 'cheerful' AS mood").first)
        let error = #expect(throws: StoreError.self) { try stranger.value("mood", as: Mood.self) }
        #expect(error?.code == .corrupt && error?.message.contains("cheerful") == true)
        #expect(throws: StoreError.self) { try stranger.optionalValue("mood", as: Mood.self) }
    }

    /// (accessor description, column, call) — each call must fail with a message naming the column.
    static let failures: [(String, String, @Sendable (SQLiteRow) throws -> Void)] = [
        ("string on INTEGER", "id", { _ = try $0.string("id") }),
        ("int64 on TEXT", "name", { _ = try $0.int64("name") }),
        ("int on REAL", "score", { _ = try $0.int("score") }),
        ("bool on TEXT", "name", { _ = try $0.bool("name") }),
        ("blob on TEXT", "name", { _ = try $0.blob("name") }),
        ("double on BLOB", "avatar", { _ = try $0.double("avatar") }),
        ("optionalString on INTEGER", "id", { _ = try $0.optionalString("id") }),
        ("string on NULL", "nickname", { _ = try $0.string("nickname") }),
        ("int64 on NULL", "nickname", { _ = try $0.int64("nickname") }),
        ("int on NULL", "nickname", { _ = try $0.int("nickname") }),
        ("bool on NULL", "nickname", { _ = try $0.bool("nickname") }),
        ("blob on NULL", "nickname", { _ = try $0.blob("nickname") }),
    ]

    @Test("type mismatches and NULL into a non-optional accessor name the column", arguments: failures.indices)
    func mismatchNamesColumn(index: Int) throws {
        let (label, column, call) = Self.failures[index]
        let row = try Self.sampleRow()
        let error = try #require(throws: StoreError.self, "\(label)") { try call(row) }
        #expect(error.code == .typeMismatch, "\(label)")
        #expect(error.message.contains("'\(column)'"), "\(label): \(error.message)")
        if column == "nickname" { #expect(error.message.contains("NULL")) }
    }

    @Test("an unknown column is reported with the available columns")
    func unknownColumn() throws {
        let row = try Self.sampleRow()
        let error = try #require(throws: StoreError.self) { try row.string("nmae") }
        #expect(error.code == .misuse)
        #expect(error.message.contains("'nmae'"))
        #expect(error.message.contains("name"))
    }
}
