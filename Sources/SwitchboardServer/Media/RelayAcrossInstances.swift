import Foundation

/// The built-in relay with several instances on one database: a call's audio sockets all reach
/// one instance (the shipped nginx site routes `/calls/{id}/audio` by a consistent hash of the
/// path), while the call's transitions may run on any instance. So every instance reports the
/// sockets it holds per room (`relay_presence`), and each empty-room watchdog counts them all;
/// and the instance holding a room closes its sockets when another instance ended the call or
/// took a user out of it.
enum RelayAcrossInstances {
    /// How often an instance reports its rooms and checks their calls.
    static let interval: Duration = .seconds(2)
    /// A report older than this is from an instance that stopped (it is deleted).
    static let staleMS: Int64 = 10_000

    /// Sockets other instances reported in `room` lately.
    static func otherSockets(in room: String, store: ServerStore) async throws -> Int {
        let since = CallStore.milliseconds(store.environment.now()) - staleMS
        let instance = store.instanceID
        return try await store.snapshot { try $0.relayPresence.sockets(in: room, otherThan: instance, since: since) }
    }

    /// One turn: report this instance's rooms, then bring them in line with their calls.
    static func sync(_ relay: AudioRelay, store: ServerStore) async throws {
        let hosted = relay.hostedRooms()
        let instance = store.instanceID
        _ = try await store.write { transaction in
            let now = CallStore.milliseconds(transaction.date)
            try transaction.relayPresence.report(
                instance: instance, rooms: hosted.mapValues(\.users.count), at: now, stale: now - staleMS)
        }
        guard !hosted.isEmpty else { return }
        let calls = try await store.snapshot { snapshot in
            var found: [String: (users: [String], present: Set<String>?)] = [:]
            for (room, entry) in hosted {
                let call = try snapshot.calls.load(entry.callID)?.call
                let present = call.flatMap { $0.state == .active && $0.roomName == room ? Set($0.presentUserIDs) : nil }
                found[room] = (entry.users, present)
            }
            return found
        }
        await relay.reconcile(calls)
    }
}
