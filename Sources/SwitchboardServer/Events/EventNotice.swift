import SwitchboardStore

/// Wake-ups across instances on one PostgreSQL database. The transaction that writes users'
/// events also sends `NOTIFY switchboard_events` with their ids, so the notice is delivered
/// exactly when the events are committed (never before, never for a rolled-back write), to
/// every instance's listener. An instance wakes its own waiters right after its commit and
/// ignores its own notices; the others wake the waiters of those users, which then read the
/// new events from the database.
///
/// A payload is `v1 <instance id> <user id> <user id> …`, at most ``maximumPayloadBytes``
/// (PostgreSQL refuses 8,000 or more); more users take several notices.
enum EventNotice {
    static let channel = "switchboard_events"
    static let maximumPayloadBytes = 7_900

    /// The payloads that name every one of `userIDs`, in order.
    static func payloads(instance: String, userIDs: some Sequence<String>) -> [String] {
        let head = "v1 " + instance
        var payloads: [String] = []
        var current = head
        for userID in userIDs {
            if current.utf8.count + 1 + userID.utf8.count > maximumPayloadBytes, current != head {
                payloads.append(current)
                current = head
            }
            current += " " + userID
        }
        if current != head { payloads.append(current) }
        return payloads
    }

    /// The sending instance and the users of a payload; nil for one this build does not read.
    static func parse(_ payload: String) -> (instance: String, userIDs: [String])? {
        let fields = payload.split(separator: " ")
        guard fields.count >= 2, fields[0] == "v1" else { return nil }
        return (String(fields[1]), fields.dropFirst(2).map(String.init))
    }

    /// Sends the notices inside the transaction on `connection`, through the shared store's
    /// notices.
    static func send(
        for userIDs: some Sequence<String>, instance: String, through notices: any StoreNotices,
        on connection: any SQLExecutor
    ) throws {
        for payload in payloads(instance: instance, userIDs: userIDs) {
            try notices.send(payload, on: channel, in: connection)
        }
    }
}
