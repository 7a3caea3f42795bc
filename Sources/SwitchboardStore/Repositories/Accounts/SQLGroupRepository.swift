import SwitchboardWire

/// ``GroupRepository`` in SQL that SQLite and PostgreSQL both run (tables `groups`, `group_members`),
/// working on the connection of one transaction or snapshot.
package struct SQLGroupRepository: GroupRepository {
    package let connection: any SQLExecutor

    package func createGroup(id: String, name: String, ownerID: String, at timestamp: String) throws {
        try connection.run(
            "INSERT INTO groups (id, name, owner_id, created_at) VALUES (?, ?, ?, ?)",
            [.text(id), .text(name), .text(ownerID), .text(timestamp)])
    }

    package func addMember(_ userID: String, to groupID: String, at timestamp: String) throws {
        try connection.run(
            "INSERT INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, ?)",
            [.text(groupID), .text(userID), .text(timestamp)])
    }

    package func removeMember(_ userID: String, from groupID: String) throws {
        try connection.run(
            "DELETE FROM group_members WHERE group_id = ? AND user_id = ?", [.text(groupID), .text(userID)])
    }

    package func rename(_ groupID: String, to name: String) throws {
        try connection.run("UPDATE groups SET name = ? WHERE id = ?", [.text(name), .text(groupID)])
    }

    package func dissolve(_ groupID: String, at timestamp: String) throws {
        try connection.run("UPDATE groups SET dissolved_at = ? WHERE id = ?", [.text(timestamp), .text(groupID)])
    }

    package func group(_ groupID: String, visibleTo userID: String) throws -> StoredGroup? {
        try connection.query(
            """
            SELECT g.name, g.owner_id, g.created_at FROM groups g
            JOIN group_members m ON m.group_id = g.id AND m.user_id = ?
            WHERE g.id = ? AND g.dissolved_at IS NULL
            """,
            [.text(userID), .text(groupID)]
        ).first.map {
            StoredGroup(
                id: groupID, name: try $0.string("name"), ownerID: try $0.string("owner_id"),
                createdAt: try $0.string("created_at"))
        }
    }

    package func name(of groupID: String) throws -> String? {
        try connection.query("SELECT name FROM groups WHERE id = ?", [.text(groupID)]).first?.string("name")
    }

    package func memberIDs(of groupID: String) throws -> [String] {
        try connection.query(
            "SELECT user_id FROM group_members WHERE group_id = ? ORDER BY joined_at, user_id", [.text(groupID)]
        )
        .map { try $0.string("user_id") }
    }

    package func members(of groupID: String) throws -> [GroupMember] {
        try connection.query(
            """
            SELECT u.id, u.username, u.display_name, m.joined_at FROM group_members m JOIN users u ON u.id = m.user_id
            WHERE m.group_id = ? ORDER BY m.joined_at, u.username
            """,
            [.text(groupID)]
        ).map { GroupMember(user: try SQLAccountRepository.user(from: $0), joinedAt: try $0.string("joined_at")) }
    }

    package func groupIDs(of userID: String) throws -> [String] {
        try connection.query(
            """
            SELECT g.id FROM groups g JOIN group_members m ON m.group_id = g.id AND m.user_id = ?
            WHERE g.dissolved_at IS NULL ORDER BY g.created_at, g.id
            """,
            [.text(userID)]
        ).map { try $0.string("id") }
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
