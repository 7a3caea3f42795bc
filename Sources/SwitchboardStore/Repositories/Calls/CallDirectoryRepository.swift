/// The two lists a Call Directory extension keeps.
package enum CallDirectoryKind: String, Sendable, CaseIterable {
    case blocking, identification
}

/// One entry of a list: the label is nil for blocking entries.
package struct CallDirectoryEntry: Sendable, Equatable {
    package var kind: CallDirectoryKind
    package var number: Int64
    package var label: String?

    package init(kind: CallDirectoryKind, number: Int64, label: String? = nil) {
        self.kind = kind
        self.number = number
        self.label = label
    }
}

/// Whose list a source entry belongs to: a user's own, or an organisation's.
package enum CallDirectoryOwner: Sendable, Equatable {
    case user(String)
    case organization(String)

    package var kindName: String {
        switch self {
        case .user: "user"
        case .organization: "organization"
        }
    }

    package var id: String {
        switch self {
        case .user(let id), .organization(let id): id
        }
    }
}

/// One change of a user's effective list, as logged: an `add` or a `remove` (whose `label` is
/// the one the entry had, so an answer knows what the device held before).
package struct CallDirectoryChange: Sendable, Equatable {
    package var version: Int64
    package var entry: CallDirectoryEntry
    package var added: Bool

    package init(version: Int64, entry: CallDirectoryEntry, added: Bool) {
        self.version = version
        self.entry = entry
        self.added = added
    }
}

/// A stored organisation.
package struct StoredOrganization: Sendable, Equatable {
    package var id: String
    package var name: String
    package var createdAt: String

    package init(id: String, name: String, createdAt: String) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}

/// Call Directory lists (SPEC §11).
///
/// - `call_directory_sources`: what each owner lists (a user's own entries, an organisation's).
/// - `call_directory_entries`: each user's effective list, their own and their organisations'
///   entries merged; it is what the user's phone holds at the user's `version`.
/// - `call_directory_changes`: every change of an effective list by version, kept for 30 days
///   so a phone at an older version is answered with the difference; a version older than
///   what is kept (the user's `floor`) is answered with the whole list.
package protocol CallDirectoryRepository {
    // MARK: Sources
    /// The owner's entries of `kind`, ascending.
    func sources(of owner: CallDirectoryOwner, kind: CallDirectoryKind) throws -> [CallDirectoryEntry]
    /// How many entries of `kind` the owner lists.
    func sourceCount(of owner: CallDirectoryOwner, kind: CallDirectoryKind) throws -> Int
    /// Adds or relabels an entry of the owner's.
    func putSource(_ entry: CallDirectoryEntry, of owner: CallDirectoryOwner) throws
    /// Removes an entry of the owner's: false when it listed none.
    func removeSource(kind: CallDirectoryKind, number: Int64, of owner: CallDirectoryOwner) throws -> Bool
    /// Removes every entry of the owner's.
    func removeSources(of owner: CallDirectoryOwner) throws

    // MARK: Effective lists
    /// What the sources say of `numbers` for `userID` (their own entries and their
    /// organisations'): a user's own label comes before an organisation's, and among
    /// organisations the one with the smallest id wins.
    func merged(for userID: String, kind: CallDirectoryKind, numbers: [Int64]) throws -> [Int64: String?]
    /// The user's effective entries of `kind` among `numbers`.
    func entries(of userID: String, kind: CallDirectoryKind, numbers: [Int64]) throws -> [Int64: String?]
    /// The user's whole effective list, by kind and number.
    func entries(of userID: String) throws -> [CallDirectoryEntry]
    func entryCount(of userID: String) throws -> Int
    func putEntry(_ entry: CallDirectoryEntry, of userID: String) throws
    func removeEntry(kind: CallDirectoryKind, number: Int64, of userID: String) throws
    /// The user's version and floor (0 and 0 before their first change).
    func version(of userID: String) throws -> (version: Int64, floor: Int64)
    func setVersion(_ version: Int64, of userID: String) throws
    /// Logs one change of `userID`'s list at `version` (`seq` orders the changes of a version).
    func logChange(_ change: CallDirectoryChange, seq: Int, of userID: String, atMS nowMS: Int64) throws
    /// The user's changes after `version`, oldest first.
    func changes(of userID: String, after version: Int64) throws -> [CallDirectoryChange]
    func changeCount(of userID: String, after version: Int64) throws -> Int
    /// Forgets changes logged before `cutoffMS`, raising each user's floor past them; returns
    /// the changes forgotten.
    func prune(before cutoffMS: Int64) throws -> Int

    // MARK: Organisations
    func createOrganization(_ organization: StoredOrganization) throws
    func organization(_ id: String) throws -> StoredOrganization?
    /// Every organisation, by name and then id.
    func organizations() throws -> [StoredOrganization]
    func rename(_ id: String, to name: String) throws
    /// Deletes the organisation, its members and its entries.
    func deleteOrganization(_ id: String) throws
    /// The members' user ids, sorted.
    func members(of organizationID: String) throws -> [String]
    func memberCount(of organizationID: String) throws -> Int
    /// Adds a member: false when they were one.
    func addMember(_ userID: String, to organizationID: String, at timestamp: String) throws -> Bool
    /// Removes a member: false when they were none.
    func removeMember(_ userID: String, from organizationID: String) throws -> Bool
}

/// ``CallDirectoryRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLCallDirectoryRepository: CallDirectoryRepository {
    package let connection: any SQLExecutor

    /// Numbers bound per statement (well below both stores' parameter limits).
    package static let chunk = 500

    package func sources(of owner: CallDirectoryOwner, kind: CallDirectoryKind) throws -> [CallDirectoryEntry] {
        try connection.query(
            "SELECT number, label FROM call_directory_sources WHERE owner_id = ?1 AND owner_kind = ?2 AND kind = ?3 ORDER BY number",
            [.text(owner.id), .text(owner.kindName), .text(kind.rawValue)]
        ).map { CallDirectoryEntry(kind: kind, number: try $0.int64("number"), label: try $0.optionalString("label")) }
    }

    package func sourceCount(of owner: CallDirectoryOwner, kind: CallDirectoryKind) throws -> Int {
        Int(
            try connection.query(
                "SELECT count(*) AS n FROM call_directory_sources WHERE owner_id = ?1 AND owner_kind = ?2 AND kind = ?3",
                [.text(owner.id), .text(owner.kindName), .text(kind.rawValue)]
            ).first?.int64("n") ?? 0)
    }

    package func putSource(_ entry: CallDirectoryEntry, of owner: CallDirectoryOwner) throws {
        try connection.run(
            """
            INSERT INTO call_directory_sources (owner_kind, owner_id, kind, number, label) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (owner_id, kind, number, owner_kind) DO UPDATE SET label = excluded.label
            """,
            [
                .text(owner.kindName), .text(owner.id), .text(entry.kind.rawValue), .integer(entry.number),
                entry.label.map { .text($0) } ?? .null,
            ])
    }

    package func removeSource(kind: CallDirectoryKind, number: Int64, of owner: CallDirectoryOwner) throws -> Bool {
        try connection.run(
            "DELETE FROM call_directory_sources WHERE owner_id = ?1 AND kind = ?2 AND number = ?3 AND owner_kind = ?4",
            [.text(owner.id), .text(kind.rawValue), .integer(number), .text(owner.kindName)]) > 0
    }

    package func removeSources(of owner: CallDirectoryOwner) throws {
        try connection.run(
            "DELETE FROM call_directory_sources WHERE owner_id = ?1 AND owner_kind = ?2",
            [.text(owner.id), .text(owner.kindName)])
    }

    package func merged(for userID: String, kind: CallDirectoryKind, numbers: [Int64]) throws -> [Int64: String?] {
        var result: [Int64: String?] = [:]
        for part in Self.chunks(numbers) {
            let placeholders = (3..<(3 + part.count)).map { "?\($0)" }.joined(separator: ", ")
            let rows = try connection.query(
                """
                SELECT number, label, owner_kind, owner_id FROM call_directory_sources
                WHERE kind = ?1 AND number IN (\(placeholders)) AND (
                    (owner_kind = 'user' AND owner_id = ?2)
                    OR (owner_kind = 'organization' AND owner_id IN (SELECT organization_id FROM organization_members WHERE user_id = ?2)))
                ORDER BY number, CASE owner_kind WHEN 'user' THEN 0 ELSE 1 END, owner_id
                """,
                [.text(kind.rawValue), .text(userID)] + part.map { .integer($0) })
            // The first row of each number wins: the user's own, else the smallest organisation id.
            for row in rows {
                let number = try row.int64("number")
                if result[number] == nil { result[number] = .some(try row.optionalString("label")) }
            }
        }
        return result
    }

    package func entries(of userID: String, kind: CallDirectoryKind, numbers: [Int64]) throws -> [Int64: String?] {
        var result: [Int64: String?] = [:]
        for part in Self.chunks(numbers) {
            let placeholders = (3..<(3 + part.count)).map { "?\($0)" }.joined(separator: ", ")
            for row in try connection.query(
                "SELECT number, label FROM call_directory_entries WHERE user_id = ?1 AND kind = ?2 AND number IN (\(placeholders))",
                [.text(userID), .text(kind.rawValue)] + part.map { .integer($0) })
            {
                result[try row.int64("number")] = .some(try row.optionalString("label"))
            }
        }
        return result
    }

    package func entries(of userID: String) throws -> [CallDirectoryEntry] {
        try connection.query(
            "SELECT kind, number, label FROM call_directory_entries WHERE user_id = ?1 ORDER BY kind, number",
            [.text(userID)]
        ).compactMap { row in
            guard let kind = CallDirectoryKind(rawValue: try row.string("kind")) else { return nil }
            return CallDirectoryEntry(
                kind: kind, number: try row.int64("number"), label: try row.optionalString("label"))
        }
    }

    package func entryCount(of userID: String) throws -> Int {
        Int(
            try connection.query("SELECT count(*) AS n FROM call_directory_entries WHERE user_id = ?1", [.text(userID)])
                .first?.int64("n") ?? 0)
    }

    package func putEntry(_ entry: CallDirectoryEntry, of userID: String) throws {
        try connection.run(
            """
            INSERT INTO call_directory_entries (user_id, kind, number, label) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (user_id, kind, number) DO UPDATE SET label = excluded.label
            """,
            [.text(userID), .text(entry.kind.rawValue), .integer(entry.number), entry.label.map { .text($0) } ?? .null])
    }

    package func removeEntry(kind: CallDirectoryKind, number: Int64, of userID: String) throws {
        try connection.run(
            "DELETE FROM call_directory_entries WHERE user_id = ?1 AND kind = ?2 AND number = ?3",
            [.text(userID), .text(kind.rawValue), .integer(number)])
    }

    package func version(of userID: String) throws -> (version: Int64, floor: Int64) {
        guard
            let row = try connection.query(
                "SELECT version, floor FROM call_directory_versions WHERE user_id = ?1", [.text(userID)]
            ).first
        else { return (0, 0) }
        return (try row.int64("version"), try row.int64("floor"))
    }

    package func setVersion(_ version: Int64, of userID: String) throws {
        try connection.run(
            """
            INSERT INTO call_directory_versions (user_id, version, floor) VALUES (?1, ?2, 0)
            ON CONFLICT (user_id) DO UPDATE SET version = excluded.version
            """,
            [.text(userID), .integer(version)])
    }

    package func logChange(_ change: CallDirectoryChange, seq: Int, of userID: String, atMS nowMS: Int64) throws {
        try connection.run(
            """
            INSERT INTO call_directory_changes (user_id, version, seq, kind, number, label, op, created_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            """,
            [
                .text(userID), .integer(change.version), .integer(Int64(seq)), .text(change.entry.kind.rawValue),
                .integer(change.entry.number),
                change.entry.label.map { .text($0) } ?? .null, .text(change.added ? "add" : "remove"), .integer(nowMS),
            ])
    }

    package func changes(of userID: String, after version: Int64) throws -> [CallDirectoryChange] {
        try connection.query(
            "SELECT version, kind, number, label, op FROM call_directory_changes WHERE user_id = ?1 AND version > ?2 ORDER BY version, seq",
            [.text(userID), .integer(version)]
        ).compactMap { row in
            guard let kind = CallDirectoryKind(rawValue: try row.string("kind")) else { return nil }
            return CallDirectoryChange(
                version: try row.int64("version"),
                entry: CallDirectoryEntry(
                    kind: kind, number: try row.int64("number"), label: try row.optionalString("label")),
                added: try row.string("op") == "add")
        }
    }

    package func changeCount(of userID: String, after version: Int64) throws -> Int {
        Int(
            try connection.query(
                "SELECT count(*) AS n FROM call_directory_changes WHERE user_id = ?1 AND version > ?2",
                [.text(userID), .integer(version)]
            ).first?.int64("n") ?? 0)
    }

    package func prune(before cutoffMS: Int64) throws -> Int {
        try connection.run(
            """
            UPDATE call_directory_versions SET floor = \(connection.dialect.greatest)(floor, (
                SELECT max(c.version) FROM call_directory_changes c
                WHERE c.user_id = call_directory_versions.user_id AND c.created_at_ms < ?1))
            WHERE user_id IN (SELECT user_id FROM call_directory_changes WHERE created_at_ms < ?1)
            """,
            [.integer(cutoffMS)])
        return try connection.run("DELETE FROM call_directory_changes WHERE created_at_ms < ?1", [.integer(cutoffMS)])
    }

    package func createOrganization(_ organization: StoredOrganization) throws {
        try connection.run(
            "INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, ?3)",
            [.text(organization.id), .text(organization.name), .text(organization.createdAt)])
    }

    package func organization(_ id: String) throws -> StoredOrganization? {
        try connection.query("SELECT id, name, created_at FROM organizations WHERE id = ?1", [.text(id)]).first.map {
            row in
            StoredOrganization(
                id: try row.string("id"), name: try row.string("name"), createdAt: try row.string("created_at"))
        }
    }

    package func organizations() throws -> [StoredOrganization] {
        try connection.query("SELECT id, name, created_at FROM organizations ORDER BY name, id", []).map { row in
            StoredOrganization(
                id: try row.string("id"), name: try row.string("name"), createdAt: try row.string("created_at"))
        }
    }

    package func rename(_ id: String, to name: String) throws {
        try connection.run("UPDATE organizations SET name = ?2 WHERE id = ?1", [.text(id), .text(name)])
    }

    package func deleteOrganization(_ id: String) throws {
        try removeSources(of: .organization(id))
        try connection.run("DELETE FROM organization_members WHERE organization_id = ?1", [.text(id)])
        try connection.run("DELETE FROM organizations WHERE id = ?1", [.text(id)])
    }

    package func members(of organizationID: String) throws -> [String] {
        try connection.query(
            "SELECT user_id FROM organization_members WHERE organization_id = ?1 ORDER BY user_id",
            [.text(organizationID)]
        ).map { try $0.string("user_id") }
    }

    package func memberCount(of organizationID: String) throws -> Int {
        Int(
            try connection.query(
                "SELECT count(*) AS n FROM organization_members WHERE organization_id = ?1", [.text(organizationID)]
            ).first?.int64("n") ?? 0)
    }

    package func addMember(_ userID: String, to organizationID: String, at timestamp: String) throws -> Bool {
        try connection.run(
            """
            INSERT INTO organization_members (organization_id, user_id, joined_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (organization_id, user_id) DO NOTHING
            """,
            [.text(organizationID), .text(userID), .text(timestamp)]) > 0
    }

    package func removeMember(_ userID: String, from organizationID: String) throws -> Bool {
        try connection.run(
            "DELETE FROM organization_members WHERE organization_id = ?1 AND user_id = ?2",
            [.text(organizationID), .text(userID)]) > 0
    }

    private static func chunks(_ numbers: [Int64]) -> [ArraySlice<Int64>] {
        stride(from: 0, to: numbers.count, by: chunk).map { numbers[$0..<min($0 + chunk, numbers.count)] }
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
