@testable import SwitchboardStore
import Testing

@Suite("Store errors", .timeLimit(.minutes(3)))
struct StoreErrorTests {
    /// (statement that violates a constraint, expected kind)
    static let violations: [(String, StoreError.ConstraintKind)] = [
        ("INSERT INTO users (id, email, team_id) VALUES (2, 'a@example.com', 1)", .unique),
        ("INSERT INTO users (id, email, team_id) VALUES (1, 'b@example.com', 1)", .primaryKey),
        ("INSERT INTO users (id, email, team_id) VALUES (3, 'c@example.com', 99)", .foreignKey),
        ("INSERT INTO users (id, email, team_id) VALUES (4, NULL, 1)", .notNull),
        ("INSERT INTO users (id, email, team_id, age) VALUES (5, 'e@example.com', 1, -1)", .check),
    ]

    static let schema = [
        Migration(
            version: 1, name: "users",
            sql: """
                CREATE TABLE teams (id INTEGER PRIMARY KEY);
                CREATE TABLE users (
                    id INTEGER PRIMARY KEY,
                    email TEXT NOT NULL UNIQUE,
                    team_id INTEGER NOT NULL REFERENCES teams (id),
                    age INTEGER CHECK (age IS NULL OR age >= 0)
                );
                INSERT INTO teams (id) VALUES (1);
                INSERT INTO users (id, email, team_id) VALUES (1, 'a@example.com', 1);
                """)
    ]

    @Test("constraint violations surface as .constraint with the kind told apart", arguments: violations)
    func constraintKind(sql: String, kind: StoreError.ConstraintKind) async throws {
        try await withDatabase(migrations: Self.schema) { database, _ in
            let error = try await #require(throws: StoreError.self) {
                try await database.write { try $0.run(sql) }
            }
            #expect(error.code == .constraint)
            #expect(error.constraint == kind)
            #expect(error.sql == sql)
            #expect(!error.message.isEmpty)
            let count = try await database.read { try scalar($0, "SELECT count(*) FROM users") }
            #expect(count == 1)
        }
    }

    @Test(
        "primary result codes map to stable codes",
        arguments: [
            (Int32(5), StoreError.Code.busy), (6, .locked), (19, .constraint), (11, .corrupt), (26, .corrupt),
            (13, .full), (8, .readOnly), (10, .io), (14, .io), (21, .misuse), (25, .misuse), (20, .typeMismatch),
            (1, .sql), (7, .unknown(7)),
        ])
    func codeMapping(primary: Int32, code: StoreError.Code) {
        #expect(StoreError.Code(sqlitePrimaryCode: primary) == code)
    }

    @Test("long SQL is truncated in the error")
    func truncation() {
        let sql = String(repeating: "x", count: 1_000)
        let error = StoreError(code: .sql, message: "boom", sql: sql)
        #expect(error.sql?.count == StoreError.maximumSQLLength + 1)
        #expect(error.constraint == nil)
    }
}
