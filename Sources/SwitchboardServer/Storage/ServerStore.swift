import Foundation
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardObservability
import SwitchboardStore
import SwitchboardWire

/// Time and ids as injected values, so tests control both.
public struct ServerEnvironment: Sendable {
    /// The current time.
    public var now: @Sendable () -> Date
    /// A fresh id (a lowercase UUID string).
    public var newID: @Sendable () -> String
    /// Suspends until `now()` reaches the given moment (at once when it has); throws
    /// `CancellationError` when the task is cancelled. Background work that waits for a moment
    /// in stored time (the push dispatcher's next attempt) sleeps through this, so a test's
    /// manual clock wakes it.
    public var sleepUntil: @Sendable (Date) async throws -> Void

    /// The moment `duration` after now, on this clock.
    public func moment(after duration: Duration) -> Date { now().addingTimeInterval(duration.inSeconds) }

    /// Sleeps `duration` on this clock; throws `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws { try await sleepUntil(moment(after: duration)) }

    /// Wall-clock time, random UUIDs and real sleeps. The ids come from OpenSSL's generator,
    /// not Foundation's `UUID()`, which on Linux opens, reads and closes `/dev/urandom` for
    /// every id (three system calls on each call's path).
    public static let live = ServerEnvironment(now: { Date() }, newID: { SecureRandom.uuid() })

    /// Creates an environment. Without `sleepUntil`, a sleep lasts the real time between
    /// `now()` and the moment (measured against `now`, so a clock that is not the wall clock
    /// never turns it into zero-length sleeps).
    public init(
        now: @escaping @Sendable () -> Date, newID: @escaping @Sendable () -> String,
        sleepUntil: (@Sendable (Date) async throws -> Void)? = nil
    ) {
        self.now = now
        self.newID = newID
        self.sleepUntil = sleepUntil ?? { moment in
            let seconds = moment.timeIntervalSince(now())
            guard seconds > 0 else { return try Task.checkCancellation() }
            try await Task.sleep(for: .milliseconds(Int64((min(seconds, 86_400) * 1000).rounded(.up))))
        }
    }
}

/// The name of the background loop the current task runs (push dispatcher, ring-timeout sweep,
/// …), for whoever looks at its sleeps: a test's manual clock tells the loops apart by it.
public enum BackgroundLoop {
    @TaskLocal public static var name: String?
}

/// One write transaction as services see it: the connection, the time of the change, and an
/// event writer whose users are woken after the commit.
public final class WriteTransaction {
    /// The writer connection, inside `BEGIN IMMEDIATE`.
    public let connection: SQLiteConnection
    /// The moment of this change, as stored text.
    public let timestamp: String
    /// The moment of this change.
    public let date: Date
    let environment: ServerEnvironment
    /// The events this transaction wrote, per user, in id order.
    fileprivate(set) var written: [String: [Event]] = [:]

    init(connection: SQLiteConnection, environment: ServerEnvironment) {
        self.connection = connection
        self.environment = environment
        date = environment.now()
        timestamp = Timestamp.iso8601(date)
    }

    /// A fresh id.
    public func newID() -> String { environment.newID() }

    /// Accounts and sessions, in this transaction.
    public var accounts: any AccountRepository { SQLiteAccountRepository(connection: connection) }

    /// The push devices, in this transaction.
    public var devices: any DeviceRepository { SQLiteDeviceRepository(connection: connection) }

    /// The push outbox, in this transaction.
    var pushJobs: any PushJobRepository { SQLitePushJobRepository(connection: connection) }

    /// Writes one event row per user (in the order given, duplicates dropped); their waiters
    /// are woken once the transaction commits.
    ///
    /// Many users (a group message to thousands) are written by one statement that reads their
    /// ids from a JSON array (`json_each`) and hands each new row back (`RETURNING`): one
    /// statement instead of one per user, which costs a third of the write.
    public func appendEvent(
        _ kind: String, to userIDs: [String], conversationID: String? = nil, groupID: String? = nil,
        messageID: String? = nil, callID: String? = nil
    ) throws {
        var seen = Set<String>()
        let unique = userIDs.filter { seen.insert($0).inserted }
        let references: [SQLiteValue] = [
            .text(kind), conversationID.map(SQLiteValue.text) ?? .null, groupID.map(SQLiteValue.text) ?? .null,
            messageID.map(SQLiteValue.text) ?? .null, callID.map(SQLiteValue.text) ?? .null, .text(timestamp),
        ]
        func record(_ userID: String, _ id: Int64) {
            remember(id, for: userID, kind: kind, conversationID: conversationID, groupID: groupID, messageID: messageID, callID: callID)
        }
        if unique.count > Self.batchThreshold {
            var array = "["
            for (index, userID) in unique.enumerated() {
                if index > 0 { array += "," }
                JSONText.appendString(userID, to: &array)
            }
            array += "]"
            try insertReturning(
                "SELECT value, ?, ?, ?, ?, ?, ? FROM json_each(?) ORDER BY key", references + [.text(array)], record: record)
            return
        }
        let statement = try connection.prepare(
            """
            INSERT INTO events (user_id, kind, conversation_id, group_id, message_id, call_id, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        for userID in unique {
            try statement.run([.text(userID)] + references)
            record(userID, connection.lastInsertRowID)
        }
    }

    /// Writes one event row for each member of `groupID` (in the order they joined), with one
    /// statement that reads the members itself: a message to a group of thousands neither
    /// reads the member list into the process nor binds one insert per member.
    public func appendEvent(
        _ kind: String, toMembersOf groupID: String, messageID: String? = nil, callID: String? = nil
    ) throws {
        let references: [SQLiteValue] = [
            .text(kind), .null, .text(groupID), messageID.map(SQLiteValue.text) ?? .null,
            callID.map(SQLiteValue.text) ?? .null, .text(timestamp),
        ]
        try insertReturning(
            "SELECT user_id, ?, ?, ?, ?, ?, ? FROM group_members WHERE group_id = ? ORDER BY joined_at, user_id",
            references + [.text(groupID)]
        ) { userID, id in
            remember(id, for: userID, kind: kind, conversationID: nil, groupID: groupID, messageID: messageID, callID: callID)
        }
    }

    /// Keeps a written event for its user's waiters (woken after the commit).
    private func remember(
        _ id: Int64, for userID: String, kind: String, conversationID: String?, groupID: String?, messageID: String?, callID: String?
    ) {
        written[userID, default: []].append(Event(
            id: id, kind: kind, conversationId: conversationID, groupId: groupID, messageId: messageID, callId: callID, createdAt: timestamp))
    }

    /// `INSERT INTO events … <select>` whose select yields (user, kind, conversation, group,
    /// message, call, created_at) rows; hands each new row's user and id to `record`, in id
    /// order (`RETURNING`'s own order is unspecified).
    private func insertReturning(_ select: String, _ bindings: [SQLiteValue], record: (String, Int64) -> Void) throws {
        let statement = try connection.prepare(
            "INSERT INTO events (user_id, kind, conversation_id, group_id, message_id, call_id, created_at) "
                + select + " RETURNING id, user_id")
        var returned: [(id: Int64, userID: String)] = []
        try statement.forEachRow(bindings) { row in
            guard case .integer(let id) = row[0], case .text(let userID) = row[1] else {
                throw StoreError(code: .typeMismatch, message: "RETURNING id, user_id gave \(row.values)")
            }
            returned.append((id, userID))
        }
        returned.sort { $0.id < $1.id }
        for (id, userID) in returned { record(userID, id) }
    }

    /// Above this many users, `appendEvent` writes them with one statement.
    static let batchThreshold = 16
}

/// One read snapshot as services see it: the repositories over it. (Its connection stays
/// until every aggregate has a repository of its own.)
public struct ReadSnapshot {
    /// The reader connection, inside one snapshot.
    public let connection: SQLiteConnection

    /// Accounts and sessions, as of this snapshot.
    public var accounts: any AccountRepository { SQLiteAccountRepository(connection: connection) }

    /// The push devices, as of this snapshot.
    public var devices: any DeviceRepository { SQLiteDeviceRepository(connection: connection) }

    /// The push outbox, as of this snapshot.
    var pushJobs: any PushJobRepository { SQLitePushJobRepository(connection: connection) }
}

/// The database plus the event hub: every write that appends events wakes those users'
/// held requests right after its commit, never before and never by polling.
public final class ServerStore: Sendable {
    /// The database.
    public let database: Database
    /// Held event requests.
    public let hub: EventHub
    /// Time and ids.
    public let environment: ServerEnvironment

    /// Creates the store; without `hub`, one on `environment`'s clock.
    public init(database: Database, hub: EventHub? = nil, environment: ServerEnvironment = .live) {
        self.database = database
        self.hub = hub ?? EventHub(environment: environment)
        self.environment = environment
    }

    /// Runs `body` in one write transaction; right after it commits (on the writer queue, so in
    /// commit order) hands the events it wrote to their users' waiters. A thrown error rolls
    /// everything back and wakes nobody.
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        let environment = self.environment
        let hub = self.hub
        let (result, _) = try await database.write({ connection in
            let transaction = WriteTransaction(connection: connection, environment: environment)
            let result = try body(transaction)
            return (result, transaction.written)
        }, afterCommit: { output in
            if !output.1.isEmpty { hub.deliver(output.1) }
        })
        return result
    }

    /// Runs `body` on a reader connection inside one snapshot.
    ///
    /// Reads run on the calling thread (an event loop) once a reader is free; `onReaderQueue`
    /// sends one that may scan a whole table to the reader's own queue instead.
    public func read<T: Sendable>(
        onReaderQueue: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        try await database.read(onReaderQueue: onReaderQueue, body)
    }

    /// Runs `body` on one read snapshot, through its repositories (as ``read(onReaderQueue:_:)``).
    public func snapshot<T: Sendable>(
        onReaderQueue: Bool = false, _ body: @escaping @Sendable (ReadSnapshot) throws -> T
    ) async throws -> T {
        try await database.read(onReaderQueue: onReaderQueue) { connection in try body(ReadSnapshot(connection: connection)) }
    }
}
