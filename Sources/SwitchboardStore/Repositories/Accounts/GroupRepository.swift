import SwitchboardWire

/// A group's own row.
public struct StoredGroup: Sendable, Equatable {
    public let id: String
    public let name: String
    public let ownerID: String
    public let createdAt: String

    package init(id: String, name: String, ownerID: String, createdAt: String) {
        self.id = id
        self.name = name
        self.ownerID = ownerID
        self.createdAt = createdAt
    }
}

/// Groups and their members. A dissolved group is kept (its history stays) but no longer seen.
/// SQLite implements it today (``SQLGroupRepository``); the contract suite tests every
/// implementation.
public protocol GroupRepository {
    func createGroup(id: String, name: String, ownerID: String, at timestamp: String) throws
    func addMember(_ userID: String, to groupID: String, at timestamp: String) throws
    func removeMember(_ userID: String, from groupID: String) throws
    func rename(_ groupID: String, to name: String) throws
    func dissolve(_ groupID: String, at timestamp: String) throws
    /// The group, if it is not dissolved and `userID` is a member.
    func group(_ groupID: String, visibleTo userID: String) throws -> StoredGroup?
    /// The group's name (dissolved or not).
    func name(of groupID: String) throws -> String?
    /// Member ids in the order they joined (ties by user id).
    func memberIDs(of groupID: String) throws -> [String]
    /// Members in the order they joined (ties by username).
    func members(of groupID: String) throws -> [GroupMember]
    /// The live groups the user is in, oldest first.
    func groupIDs(of userID: String) throws -> [String]
}
