import Foundation

/// One of the app's webhook endpoints: where events go, which ones, and the secrets that sign
/// them (newest first; two while one is being rotated out).
package struct WebhookEndpointRecord: Sendable, Equatable {
    package var id: String
    package var url: String
    /// The event types it wants; empty for every type.
    package var events: [String]
    package var enabled: Bool
    package var secrets: [String]
    package var description: String
    package var createdAt: String
    package var updatedAt: String

    package init(
        id: String, url: String, events: [String], enabled: Bool, secrets: [String], description: String,
        createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.url = url
        self.events = events
        self.enabled = enabled
        self.secrets = secrets
        self.description = description
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Whether it wants events of `type`.
    package func wants(_ type: String) -> Bool { enabled && (events.isEmpty || events.contains(type)) }
}

/// The webhook endpoints (table `webhook_endpoints`).
package protocol WebhookEndpointRepository {
    /// Every endpoint, oldest first.
    func all() throws -> [WebhookEndpointRecord]
    func endpoint(_ id: String) throws -> WebhookEndpointRecord?
    /// Inserts it, or replaces the one with its id.
    func save(_ endpoint: WebhookEndpointRecord) throws
    /// False when there was none.
    func delete(_ id: String) throws -> Bool
}

/// ``WebhookEndpointRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLWebhookEndpointRepository: WebhookEndpointRepository {
    package let connection: any SQLExecutor

    package func all() throws -> [WebhookEndpointRecord] {
        try connection.query("SELECT * FROM webhook_endpoints ORDER BY created_at, id", []).map(Self.endpoint(from:))
    }

    package func endpoint(_ id: String) throws -> WebhookEndpointRecord? {
        try connection.query("SELECT * FROM webhook_endpoints WHERE id = ?1", [.text(id)]).first.map(
            Self.endpoint(from:))
    }

    package func save(_ endpoint: WebhookEndpointRecord) throws {
        try connection.run(
            """
            INSERT INTO webhook_endpoints (id, url, events, enabled, secrets, description, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events, enabled = excluded.enabled,
                secrets = excluded.secrets, description = excluded.description, updated_at = excluded.updated_at
            """,
            [
                .text(endpoint.id), .text(endpoint.url), .text(Self.json(endpoint.events)),
                .integer(endpoint.enabled ? 1 : 0), .text(Self.json(endpoint.secrets)), .text(endpoint.description),
                .text(endpoint.createdAt), .text(endpoint.updatedAt),
            ])
    }

    package func delete(_ id: String) throws -> Bool {
        try connection.run("DELETE FROM webhook_endpoints WHERE id = ?1", [.text(id)]) == 1
    }

    private static func json(_ list: [String]) -> String {
        (try? String(decoding: JSONEncoder().encode(list), as: UTF8.self)) ?? "[]"
    }

    private static func list(_ text: String) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data(text.utf8))) ?? []
    }

    private static func endpoint(from row: SQLiteRow) throws -> WebhookEndpointRecord {
        WebhookEndpointRecord(
            id: try row.string("id"), url: try row.string("url"), events: list(try row.string("events")),
            enabled: try row.int("enabled") != 0, secrets: list(try row.string("secrets")),
            description: try row.string("description"), createdAt: try row.string("created_at"),
            updatedAt: try row.string("updated_at"))
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
