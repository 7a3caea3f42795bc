/// Call Directory lists (SPEC §11): numbers a user's phone blocks, and numbers it labels.
///
/// Numbers are E.164 digits as one integer: country code and national number with no `+`,
/// spaces or leading zero, 7 to 15 digits (`18005551234` for +1 800 555 1234), the form a
/// Call Directory extension adds (`CXCallDirectoryPhoneNumber`).
public enum CallDirectoryNumber {
    /// The smallest and largest valid numbers (7 and 15 digits).
    public static let range: ClosedRange<Int64> = 1_000_000...999_999_999_999_999
    /// The longest label.
    public static let maximumLabelLength = 100
}

/// A number the phone labels when it rings ("Acme support").
public struct CallDirectoryIdentification: Codable, Sendable, Hashable {
    public var number: Int64
    public var label: String

    public init(number: Int64, label: String) {
        self.number = number
        self.label = label
    }
}

/// Blocking numbers to add and to remove.
public struct CallDirectoryBlockingChanges: Codable, Sendable, Equatable {
    public var add: [Int64]
    public var remove: [Int64]

    public init(add: [Int64] = [], remove: [Int64] = []) {
        self.add = add
        self.remove = remove
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        add = try container.decodeUnlessAbsent([Int64].self, forKey: .add) ?? []
        remove = try container.decodeUnlessAbsent([Int64].self, forKey: .remove) ?? []
    }

    enum CodingKeys: String, CodingKey { case add, remove }
}

/// Identification entries to add (or relabel) and numbers to remove.
public struct CallDirectoryIdentificationChanges: Codable, Sendable, Equatable {
    public var add: [CallDirectoryIdentification]
    public var remove: [Int64]

    public init(add: [CallDirectoryIdentification] = [], remove: [Int64] = []) {
        self.add = add
        self.remove = remove
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        add = try container.decodeUnlessAbsent([CallDirectoryIdentification].self, forKey: .add) ?? []
        remove = try container.decodeUnlessAbsent([Int64].self, forKey: .remove) ?? []
    }

    enum CodingKeys: String, CodingKey { case add, remove }
}

/// `PATCH /call-directory` (one's own list) and `PATCH /admin/organizations/{id}/call-directory`
/// (an organisation's): what to add and remove, applied together. Both parts may be left out.
public struct CallDirectoryChanges: Codable, Sendable, Equatable {
    public var blocking: CallDirectoryBlockingChanges
    public var identification: CallDirectoryIdentificationChanges

    public init(
        blocking: CallDirectoryBlockingChanges = .init(), identification: CallDirectoryIdentificationChanges = .init()
    ) {
        self.blocking = blocking
        self.identification = identification
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        blocking = try container.decodeUnlessAbsent(CallDirectoryBlockingChanges.self, forKey: .blocking) ?? .init()
        identification =
            try container.decodeUnlessAbsent(CallDirectoryIdentificationChanges.self, forKey: .identification)
            ?? .init()
    }

    enum CodingKeys: String, CodingKey { case blocking, identification }

    /// How many entries the changes name.
    public var count: Int {
        blocking.add.count + blocking.remove.count + identification.add.count + identification.remove.count
    }
}

/// `GET /call-directory?since=V`: the user's effective list (their own entries and their
/// organisations'), at `version`.
///
/// When `incremental` is false it is the whole list: `add` holds every entry and `remove` is
/// empty (the extension starts from nothing). When true it is what changed since the version
/// asked for: apply `remove` first, then `add`; a relabelled number is in both. Every list is
/// sorted ascending by number, the order a Call Directory extension must add entries in.
public struct CallDirectoryList: Codable, Sendable, Equatable {
    public var version: Int64
    public var incremental: Bool
    public var blocking: CallDirectoryBlockingChanges
    public var identification: CallDirectoryIdentificationChanges

    public init(
        version: Int64, incremental: Bool, blocking: CallDirectoryBlockingChanges,
        identification: CallDirectoryIdentificationChanges
    ) {
        self.version = version
        self.incremental = incremental
        self.blocking = blocking
        self.identification = identification
    }
}

/// `GET /call-directory/own`: the entries the user added themselves (not their organisations'),
/// sorted ascending.
public struct CallDirectoryOwnEntries: Codable, Sendable, Equatable {
    public var blocking: [Int64]
    public var identification: [CallDirectoryIdentification]

    public init(blocking: [Int64], identification: [CallDirectoryIdentification]) {
        self.blocking = blocking
        self.identification = identification
    }
}

/// The answer to a change of one's own list: the effective list's version after it.
public struct CallDirectoryVersion: Codable, Sendable, Equatable {
    public var version: Int64

    public init(version: Int64) { self.version = version }
}

/// An organisation (admin API): a named set of users who share its Call Directory list.
public struct Organization: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var createdAt: String
    public var memberCount: Int
    public var blockingCount: Int
    public var identificationCount: Int

    public init(
        id: String, name: String, createdAt: String, memberCount: Int, blockingCount: Int, identificationCount: Int
    ) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.memberCount = memberCount
        self.blockingCount = blockingCount
        self.identificationCount = identificationCount
    }
}

/// `GET /admin/organizations`: every organisation, by name and then id.
public struct OrganizationList: Codable, Sendable, Equatable {
    public var organizations: [Organization]

    public init(organizations: [Organization]) { self.organizations = organizations }
}

/// `POST /admin/organizations` and `PUT /admin/organizations/{id}`.
public struct OrganizationName: Codable, Sendable, Equatable {
    public var name: String

    public init(name: String) { self.name = name }
}

/// `GET /admin/organizations/{id}/members`: the members' user ids, sorted.
public struct OrganizationMembers: Codable, Sendable, Equatable {
    public var userIds: [String]

    public init(userIds: [String]) { self.userIds = userIds }
}

extension KeyedDecodingContainer {
    /// The value, or nil when the key is absent; unlike `decodeIfPresent`, an explicit `null`
    /// is a type error (a part that may be left out is still not nullable).
    func decodeUnlessAbsent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        contains(key) ? try decode(type, forKey: key) : nil
    }
}
