import SwitchboardWire

/// One live-location share as stored: a user's position in a conversation or group, until
/// `expiresAtMS` (milliseconds since 1970; `expiresAt` is the same moment as text).
package struct StoredLiveLocation: Sendable, Equatable {
    package var scope: MessageScope
    package var userID: String
    package var latitude: Double
    package var longitude: Double
    package var accuracy: Double
    package var startedAt: String
    package var updatedAt: String
    package var expiresAt: String
    package var expiresAtMS: Int64

    /// The answer's form.
    package var wire: LiveLocation {
        LiveLocation(
            userId: userID, conversationId: scope.conversationID, groupId: scope.groupID, latitude: latitude,
            longitude: longitude,
            accuracy: accuracy, startedAt: startedAt, updatedAt: updatedAt, expiresAt: expiresAt)
    }

    package init(
        scope: MessageScope, userID: String, latitude: Double, longitude: Double, accuracy: Double, startedAt: String,
        updatedAt: String, expiresAt: String, expiresAtMS: Int64
    ) {
        self.scope = scope
        self.userID = userID
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
        self.expiresAtMS = expiresAtMS
    }
}

extension MessageScope {
    /// The stored name of the scope's kind.
    package var kindName: String {
        switch self {
        case .conversation: "conversation"
        case .group: "group"
        }
    }

    /// The id when this is a conversation (the answers' and events' `conversationId`).
    package var conversationID: String? { if case .conversation(let id) = self { id } else { nil } }
    /// The id when this is a group.
    package var groupID: String? { if case .group(let id) = self { id } else { nil } }

    /// The scope of a stored kind name and id; nil for a kind this build does not know.
    package init?(kindName: String, id: String) {
        switch kindName {
        case "conversation": self = .conversation(id)
        case "group": self = .group(id)
        default: return nil
        }
    }
}

/// Live-location shares (table `live_locations`): at most one per user and scope. Reads take
/// the current time and leave out shares that have expired but are not swept yet, so nobody
/// sees a share past its end.
package protocol LiveLocationRepository {
    /// The user's share in the scope, running or expired and not swept yet.
    func share(in scope: MessageScope, of userID: String) throws -> StoredLiveLocation?
    /// Writes the share, replacing the user's earlier one in its scope.
    func save(_ share: StoredLiveLocation) throws
    /// The scope's running shares at `nowMS`, by user id.
    func shares(in scope: MessageScope, runningAt nowMS: Int64) throws -> [StoredLiveLocation]
    /// The user's running shares at `nowMS`, oldest start first.
    func shares(of userID: String, runningAt nowMS: Int64) throws -> [StoredLiveLocation]
    /// Ends the user's share in the scope: false when there was none.
    func remove(in scope: MessageScope, of userID: String) throws -> Bool
    /// Ends every share in the scope; returns how many ended.
    func removeAll(in scope: MessageScope) throws -> Int
    /// Whether some share has expired at `nowMS` (a cheap look before a sweep writes).
    func anyExpired(at nowMS: Int64) throws -> Bool
    /// Ends up to `limit` shares that expired at `nowMS` and returns them.
    func removeExpired(at nowMS: Int64, limit: Int) throws -> [StoredLiveLocation]
}

/// ``LiveLocationRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLLiveLocationRepository: LiveLocationRepository {
    package let connection: any SQLExecutor

    private static let columns =
        "scope_kind, scope_id, user_id, latitude, longitude, accuracy, started_at, updated_at, expires_at, expires_at_ms"

    package func share(in scope: MessageScope, of userID: String) throws -> StoredLiveLocation? {
        try connection.query(
            "SELECT \(Self.columns) FROM live_locations WHERE scope_id = ?1 AND user_id = ?2 AND scope_kind = ?3",
            [.text(scope.id), .text(userID), .text(scope.kindName)]
        ).first.flatMap(Self.share(from:))
    }

    package func save(_ share: StoredLiveLocation) throws {
        try connection.run(
            """
            INSERT INTO live_locations (\(Self.columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            ON CONFLICT (scope_id, user_id) DO UPDATE SET scope_kind = excluded.scope_kind, latitude = excluded.latitude,
                longitude = excluded.longitude, accuracy = excluded.accuracy, started_at = excluded.started_at,
                updated_at = excluded.updated_at, expires_at = excluded.expires_at, expires_at_ms = excluded.expires_at_ms
            """,
            [
                .text(share.scope.kindName), .text(share.scope.id), .text(share.userID), .real(share.latitude),
                .real(share.longitude),
                .real(share.accuracy), .text(share.startedAt), .text(share.updatedAt), .text(share.expiresAt),
                .integer(share.expiresAtMS),
            ])
    }

    package func shares(in scope: MessageScope, runningAt nowMS: Int64) throws -> [StoredLiveLocation] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM live_locations WHERE scope_id = ?1 AND scope_kind = ?2 AND expires_at_ms > ?3 ORDER BY user_id
            """,
            [.text(scope.id), .text(scope.kindName), .integer(nowMS)]
        ).compactMap(Self.share(from:))
    }

    package func shares(of userID: String, runningAt nowMS: Int64) throws -> [StoredLiveLocation] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM live_locations WHERE user_id = ?1 AND expires_at_ms > ?2 ORDER BY started_at, scope_id
            """,
            [.text(userID), .integer(nowMS)]
        ).compactMap(Self.share(from:))
    }

    package func remove(in scope: MessageScope, of userID: String) throws -> Bool {
        try connection.run(
            "DELETE FROM live_locations WHERE scope_id = ?1 AND user_id = ?2 AND scope_kind = ?3",
            [.text(scope.id), .text(userID), .text(scope.kindName)]) > 0
    }

    package func removeAll(in scope: MessageScope) throws -> Int {
        try connection.run(
            "DELETE FROM live_locations WHERE scope_id = ?1 AND scope_kind = ?2",
            [.text(scope.id), .text(scope.kindName)])
    }

    package func anyExpired(at nowMS: Int64) throws -> Bool {
        try !connection.query(
            "SELECT 1 AS one FROM live_locations WHERE expires_at_ms <= ?1 LIMIT 1", [.integer(nowMS)]
        ).isEmpty
    }

    package func removeExpired(at nowMS: Int64, limit: Int) throws -> [StoredLiveLocation] {
        // DELETE … RETURNING: of two instances sweeping at once, each share is returned to one.
        try connection.query(
            """
            DELETE FROM live_locations WHERE (scope_id, user_id) IN (
                SELECT scope_id, user_id FROM live_locations WHERE expires_at_ms <= ?1 ORDER BY expires_at_ms LIMIT ?2)
            RETURNING \(Self.columns)
            """,
            [.integer(nowMS), .integer(Int64(limit))]
        ).compactMap(Self.share(from:))
    }

    private static func share(from row: SQLiteRow) throws -> StoredLiveLocation? {
        guard let scope = MessageScope(kindName: try row.string("scope_kind"), id: try row.string("scope_id")) else {
            return nil
        }
        return StoredLiveLocation(
            scope: scope, userID: try row.string("user_id"), latitude: try row.double("latitude"),
            longitude: try row.double("longitude"),
            accuracy: try row.double("accuracy"), startedAt: try row.string("started_at"),
            updatedAt: try row.string("updated_at"),
            expiresAt: try row.string("expires_at"), expiresAtMS: try row.int64("expires_at_ms"))
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
