/// Server-wide values every instance on one database shares (`server_state`, key → text): the
/// relay's token secret, the readiness probe's last write.
public protocol ServerStateRepository {
    /// The value of `key`; when there is none yet, `make()`'s is stored first. Of instances
    /// that start together, the first insert wins and every one reads the same value.
    func value(of key: String, makingIt make: () -> String) throws -> String
    /// Sets `key` to `value`.
    func set(_ key: String, to value: String) throws
}

public struct SQLServerStateRepository: ServerStateRepository {
    let connection: any SQLExecutor

    public init(connection: any SQLExecutor) { self.connection = connection }

    public func value(of key: String, makingIt make: () -> String) throws -> String {
        _ = try connection.run(
            "INSERT INTO server_state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
            [.text(key), .text(make())])
        guard let row = try connection.query("SELECT value FROM server_state WHERE key = ?1", [.text(key)]).first else {
            throw StoreError(code: .io, message: "server_state has no \(key) after storing it")
        }
        return try row.string("value")
    }

    public func set(_ key: String, to value: String) throws {
        _ = try connection.run(
            "INSERT INTO server_state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(key), .text(value)])
    }
}
