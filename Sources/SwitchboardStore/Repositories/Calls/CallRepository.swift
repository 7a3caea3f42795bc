import SwitchboardCore
import SwitchboardWire

/// When a call was created and answered (milliseconds since 1970).
public struct CallTiming: Sendable, Equatable {
    public let callID: String
    public let createdAtMS: Int64
    public let answeredAtMS: Int64?

    package init(callID: String, createdAtMS: Int64, answeredAtMS: Int64?) {
        self.callID = callID
        self.createdAtMS = createdAtMS
        self.answeredAtMS = answeredAtMS
    }
}

/// A stored call and the version it was read at (a transition stores its result only if the
/// call is still at that version).
public struct StoredCall: Sendable, Equatable {
    public let call: CallRecord
    public let version: Int64

    package init(call: CallRecord, version: Int64) {
        self.call = call
        self.version = version
    }
}

/// Calls: each one's record (invitations, participants), who occupies which call (a user is in
/// at most one ringing or active call, a scope has at most one), and the lookups the timers
/// need. SQLite implements it today (``SQLCallRepository``); the contract suite tests every
/// implementation.
public protocol CallRepository {
    func load(_ callID: String) throws -> StoredCall?
    /// The call `callerID` created with `clientID` (idempotent create).
    func call(createdBy callerID: String, clientID: String) throws -> StoredCall?
    /// Stores a new call. Throws `CallTransitionError.busy` when it would put a user in two
    /// calls at once, or give its scope a second live call.
    func insert(_ call: CallRecord, clientID: String) throws
    /// Stores a transition's result if the call is still at `version`; false when another
    /// transition got there first. Throws `CallTransitionError.busy` as ``insert(_:clientID:)``.
    func update(_ call: CallRecord, from version: Int64) throws -> Bool
    /// Those of `userIDs` who are in a ringing or active call other than `excluding`.
    func busyUsers(_ userIDs: [String], excluding callID: String?) throws -> Set<String>
    /// The ringing or active call of a scope.
    func liveCallID(scopeKind: ScopeKind, scopeID: String) throws -> String?
    /// Calls not ended where the user has a ringing invitation or occupies the call (the caller
    /// while it rings, a present participant while active), oldest first.
    func liveCallIDs(involving userID: String) throws -> [String]
    /// The newest `limit` ended calls of a scope, newest first.
    func endedCallIDs(scopeKind: ScopeKind, scopeID: String, limit: Int) throws -> [String]
    /// Calls not ended whose ring deadline has passed at `nowMS` while an invitation still rings.
    func ringTimedOutCallIDs(at nowMS: Int64) throws -> [String]
    /// Every active call and its media room.
    func activeRooms() throws -> [(callID: String, roomName: String)]
    /// The newest ringing or active calls, at most `limit` (the operator console).
    func liveCallIDs(limit: Int) throws -> [String]
    /// When each call created since `sinceMS` was created and answered (the console's charts).
    func callTimings(sinceMS: Int64) throws -> [CallTiming]
    /// Whether the call is not ended and still rings `userID`.
    func rings(_ callID: String, userID: String) throws -> Bool
}
