/// Which instance holds how many audio sockets of which relay room (`relay_presence`), for
/// instances that share one database: the empty-room watchdog of any instance counts every
/// instance's sockets, and an instance that stopped reporting (it crashed) drops out.
public protocol RelayPresenceRepository {
    /// Replaces `instance`'s rows with `rooms` (room → sockets), seen at `nowMS`, and deletes
    /// every row not seen since `staleMS` (an instance that stopped reporting).
    func report(instance: String, rooms: [String: Int], at nowMS: Int64, stale staleMS: Int64) throws
    /// Sockets in `room` on instances other than `instance`, as reported since `sinceMS`.
    func sockets(in room: String, otherThan instance: String, since sinceMS: Int64) throws -> Int
}

public struct SQLRelayPresenceRepository: RelayPresenceRepository {
    let connection: any SQLExecutor

    public init(connection: any SQLExecutor) { self.connection = connection }

    public func report(instance: String, rooms: [String: Int], at nowMS: Int64, stale staleMS: Int64) throws {
        _ = try connection.run(
            "DELETE FROM relay_presence WHERE instance = ?1 OR seen_at_ms < ?2", [.text(instance), .integer(staleMS)])
        for (room, sockets) in rooms.sorted(by: { $0.key < $1.key }) where sockets > 0 {
            _ = try connection.run(
                "INSERT INTO relay_presence (room, instance, sockets, seen_at_ms) VALUES (?1, ?2, ?3, ?4)",
                [.text(room), .text(instance), .integer(Int64(sockets)), .integer(nowMS)])
        }
    }

    public func sockets(in room: String, otherThan instance: String, since sinceMS: Int64) throws -> Int {
        Int(
            try connection.query(
                "SELECT coalesce(sum(sockets), 0) AS n FROM relay_presence WHERE room = ?1 AND instance != ?2 AND seen_at_ms >= ?3",
                [.text(room), .text(instance), .integer(sinceMS)]
            ).first?.int64("n") ?? 0)
    }
}
