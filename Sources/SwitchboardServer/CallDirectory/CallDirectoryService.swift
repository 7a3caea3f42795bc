import Foundation
import SwitchboardStore
import SwitchboardWire

/// Call Directory lists (SPEC §11): blocking and identification entries a user lists, and the
/// entries of the organisations they belong to (kept through the admin API). A user's phone
/// reads their merged list, whole or as the changes since the version it holds.
///
/// Every change of an owner's entries recomputes the affected users' merged entries in the
/// same transaction, logs what changed under the next version of each, and writes
/// `call_directory_changed` to them. A number in two sources is listed once: the user's own
/// label comes first, then the organisation with the smallest id.
struct CallDirectoryService: Sendable {
    let store: ServerStore

    /// Entries one request may add or remove; larger lists go in several requests.
    static let maximumChangesPerRequest = 1_000
    /// Entries of each kind a user's own list may hold.
    static let maximumOwnEntries = 10_000
    /// Entries of each kind an organisation's list may hold.
    static let maximumOrganizationEntries = 100_000
    /// How long changes are kept for incremental answers; a phone further behind gets the whole list.
    static let retentionSeconds: Double = 30 * 86_400

    // MARK: A user's list

    /// The user's merged list at its version: the changes since `since` when that version is
    /// known and still kept (and the changes to read are not many times the list), else the
    /// whole list.
    func list(for principal: Principal, since: Int64?) async throws -> CallDirectoryList {
        let userID = principal.user.id
        return try await store.snapshot { snapshot in
            let repository = snapshot.callDirectory
            let (version, floor) = try repository.version(of: userID)
            if let since, since >= floor, since <= version {
                if since == version {
                    return CallDirectoryList(
                        version: version, incremental: true, blocking: .init(), identification: .init())
                }
                if try repository.changeCount(of: userID, after: since) <= 4 * (try repository.entryCount(of: userID))
                    + 1_000
                {
                    return Self.difference(try repository.changes(of: userID, after: since), version: version)
                }
            }
            return Self.whole(try repository.entries(of: userID), version: version)
        }
    }

    /// The entries the user listed themselves.
    func own(for principal: Principal) async throws -> CallDirectoryOwnEntries {
        let owner = CallDirectoryOwner.user(principal.user.id)
        return try await store.snapshot { try Self.entries(of: owner, in: $0) }
    }

    /// Applies the user's changes to their own list; answers their merged list's version after.
    func change(_ changes: CallDirectoryChanges, for principal: Principal) async throws -> CallDirectoryVersion {
        let normalized = try Self.validated(changes)
        let userID = principal.user.id
        return try await store.write { transaction in
            try transaction.requireQuota(
                ServerLimits.callDirectoryKey(userID), transaction.limits.callDirectoryChangesPerUser,
                cost: max(1, changes.count),
                what: "Call Directory changes")
            let touched = try Self.apply(normalized, to: .user(userID), limit: Self.maximumOwnEntries, in: transaction)
            try Self.refresh([userID], touched, in: transaction)
            return CallDirectoryVersion(version: try transaction.callDirectory.version(of: userID).version)
        }
    }

    // MARK: Organisations (admin)

    func createOrganization(_ request: OrganizationName) async throws -> Organization {
        let name = try AccountValidation.text(request.name, field: "name", maxLength: 100)
        return try await store.write { transaction in
            let organization = StoredOrganization(id: transaction.newID(), name: name, createdAt: transaction.timestamp)
            try transaction.callDirectory.createOrganization(organization)
            return try Self.answer(organization, in: transaction)
        }
    }

    func organizations() async throws -> OrganizationList {
        try await store.snapshot { snapshot in
            OrganizationList(
                organizations: try snapshot.callDirectory.organizations().map { try Self.answer($0, in: snapshot) })
        }
    }

    func organization(_ id: String) async throws -> Organization {
        try await store.snapshot { try Self.answer(try Self.require(id, in: $0), in: $0) }
    }

    func rename(_ id: String, _ request: OrganizationName) async throws -> Organization {
        let name = try AccountValidation.text(request.name, field: "name", maxLength: 100)
        return try await store.write { transaction in
            var organization = try Self.require(id, in: transaction)
            organization.name = name
            try transaction.callDirectory.rename(id, to: name)
            return try Self.answer(organization, in: transaction)
        }
    }

    /// Deletes the organisation; its members' phones lose its entries.
    func deleteOrganization(_ id: String) async throws {
        try await store.write { transaction in
            _ = try Self.require(id, in: transaction)
            let repository = transaction.callDirectory
            let members = try repository.members(of: id)
            let touched = try Self.keys(of: .organization(id), in: transaction)
            try repository.deleteOrganization(id)
            try Self.refresh(members, touched, in: transaction)
        }
    }

    func members(of id: String) async throws -> OrganizationMembers {
        try await store.snapshot { snapshot in
            _ = try Self.require(id, in: snapshot)
            return OrganizationMembers(userIds: try snapshot.callDirectory.members(of: id))
        }
    }

    /// Adds a user to the organisation (idempotent); their phone gains its entries.
    func addMember(_ userID: String, to id: String) async throws {
        try await store.write { transaction in
            _ = try Self.require(id, in: transaction)
            guard try transaction.accounts.user(id: userID) != nil else {
                throw APIError(.notFound, "no such user: \(userID)")
            }
            if try transaction.callDirectory.addMember(userID, to: id, at: transaction.timestamp) {
                try Self.refresh([userID], try Self.keys(of: .organization(id), in: transaction), in: transaction)
            }
        }
    }

    /// Removes a user from the organisation (idempotent); their phone loses its entries.
    func removeMember(_ userID: String, from id: String) async throws {
        try await store.write { transaction in
            _ = try Self.require(id, in: transaction)
            if try transaction.callDirectory.removeMember(userID, from: id) {
                try Self.refresh([userID], try Self.keys(of: .organization(id), in: transaction), in: transaction)
            }
        }
    }

    func organizationEntries(_ id: String) async throws -> CallDirectoryOwnEntries {
        try await store.snapshot { snapshot in
            _ = try Self.require(id, in: snapshot)
            return try Self.entries(of: .organization(id), in: snapshot)
        }
    }

    /// Applies changes to the organisation's list; every member's phone follows.
    func changeOrganization(_ id: String, _ changes: CallDirectoryChanges) async throws -> Organization {
        let normalized = try Self.validated(changes)
        return try await store.write { transaction in
            let organization = try Self.require(id, in: transaction)
            let touched = try Self.apply(
                normalized, to: .organization(id), limit: Self.maximumOrganizationEntries, in: transaction)
            try Self.refresh(try transaction.callDirectory.members(of: id), touched, in: transaction)
            return try Self.answer(organization, in: transaction)
        }
    }

    /// Forgets changes older than the retention window; returns how many.
    @discardableResult
    func prune(olderThan seconds: Double = CallDirectoryService.retentionSeconds) async throws -> Int {
        let cutoff = CallStore.milliseconds(store.environment.now().addingTimeInterval(-seconds))
        return try await store.write { try $0.callDirectory.prune(before: cutoff) }
    }

    // MARK: The core

    /// A request's changes checked and put in order: per kind, the numbers to set (with the
    /// label of identification entries) and those to remove, ascending and distinct.
    struct Normalized {
        var puts: [CallDirectoryKind: [(number: Int64, label: String?)]] = [:]
        var removes: [CallDirectoryKind: [Int64]] = [:]

        /// Every number the changes name, by kind.
        var touched: [CallDirectoryKind: [Int64]] {
            var result: [CallDirectoryKind: [Int64]] = [:]
            for kind in CallDirectoryKind.allCases {
                let numbers = Set((puts[kind] ?? []).map(\.number)).union(removes[kind] ?? [])
                if !numbers.isEmpty { result[kind] = numbers.sorted() }
            }
            return result
        }
    }

    static func validated(_ changes: CallDirectoryChanges) throws(APIError) -> Normalized {
        guard changes.count <= maximumChangesPerRequest else {
            throw APIError.validation(
                "at most \(maximumChangesPerRequest) entries per request: send a larger list in several requests")
        }
        func number(_ value: Int64, _ field: String) throws(APIError) -> Int64 {
            guard CallDirectoryNumber.range.contains(value) else {
                throw APIError.validation(
                    "'\(field)' must be an E.164 number as digits, 7 to 15 of them with the country code first (18005551234 for +1 800 555 1234)",
                    field: field)
            }
            return value
        }
        var result = Normalized()
        // Blocking.
        var blocking = Set<Int64>()
        for (index, value) in changes.blocking.add.enumerated() {
            blocking.insert(try number(value, "blocking.add[\(index)]"))
        }
        var unblocking = Set<Int64>()
        for (index, value) in changes.blocking.remove.enumerated() {
            let checked = try number(value, "blocking.remove[\(index)]")
            guard !blocking.contains(checked) else {
                throw APIError.validation(
                    "\(checked) is both added and removed in 'blocking'", field: "blocking.remove[\(index)]")
            }
            unblocking.insert(checked)
        }
        // Identification.
        var labels: [Int64: String] = [:]
        for (index, entry) in changes.identification.add.enumerated() {
            let checked = try number(entry.number, "identification.add[\(index)].number")
            let label = try AccountValidation.text(
                entry.label, field: "identification.add[\(index)].label",
                maxLength: CallDirectoryNumber.maximumLabelLength)
            if let earlier = labels[checked], earlier != label {
                throw APIError.validation(
                    "\(checked) is added twice with different labels", field: "identification.add[\(index)].label")
            }
            labels[checked] = label
        }
        var unlabelling = Set<Int64>()
        for (index, value) in changes.identification.remove.enumerated() {
            let checked = try number(value, "identification.remove[\(index)]")
            guard labels[checked] == nil else {
                throw APIError.validation(
                    "\(checked) is both added and removed in 'identification'", field: "identification.remove[\(index)]"
                )
            }
            unlabelling.insert(checked)
        }
        result.puts[.blocking] = blocking.sorted().map { ($0, nil) }
        result.removes[.blocking] = unblocking.sorted()
        result.puts[.identification] = labels.keys.sorted().map { ($0, labels[$0]) }
        result.removes[.identification] = unlabelling.sorted()
        return result
    }

    /// Writes the changes to the owner's entries; 409 `CALL_DIRECTORY_FULL` when a list would
    /// pass `limit`. Returns the numbers named, by kind.
    static func apply(
        _ changes: Normalized, to owner: CallDirectoryOwner, limit: Int, in transaction: WriteTransaction
    ) throws -> [CallDirectoryKind: [Int64]] {
        let repository = transaction.callDirectory
        for kind in CallDirectoryKind.allCases {
            for number in changes.removes[kind] ?? [] {
                _ = try repository.removeSource(kind: kind, number: number, of: owner)
            }
            for put in changes.puts[kind] ?? [] {
                try repository.putSource(
                    CallDirectoryEntry(kind: kind, number: put.number, label: put.label), of: owner)
            }
            if !(changes.puts[kind] ?? []).isEmpty, try repository.sourceCount(of: owner, kind: kind) > limit {
                throw APIError(
                    .callDirectoryFull,
                    "a \(owner.kindName)'s \(kind.rawValue) list holds at most \(limit) entries: remove some first")
            }
        }
        return changes.touched
    }

    /// Every number the owner lists, by kind.
    static func keys(
        of owner: CallDirectoryOwner, in repositories: any Repositories
    ) throws -> [CallDirectoryKind: [Int64]] {
        var result: [CallDirectoryKind: [Int64]] = [:]
        for kind in CallDirectoryKind.allCases {
            let numbers = try repositories.callDirectory.sources(of: owner, kind: kind).map(\.number)
            if !numbers.isEmpty { result[kind] = numbers }
        }
        return result
    }

    /// Brings each user's merged entries for `touched` in line with the sources: what changed
    /// is logged under the user's next version (one per transaction), and the users whose
    /// list changed are told.
    static func refresh(
        _ userIDs: [String], _ touched: [CallDirectoryKind: [Int64]], in transaction: WriteTransaction
    ) throws {
        guard !touched.isEmpty else { return }
        let repository = transaction.callDirectory
        let nowMS = CallStore.milliseconds(transaction.date)
        var changed: [String] = []
        for userID in userIDs {
            var version: Int64?
            var seq = 0
            func log(_ entry: CallDirectoryEntry, added: Bool) throws {
                if version == nil { version = try repository.version(of: userID).version + 1 }
                try repository.logChange(
                    CallDirectoryChange(version: version!, entry: entry, added: added), seq: seq, of: userID,
                    atMS: nowMS)
                seq += 1
            }
            for kind in CallDirectoryKind.allCases {
                guard let numbers = touched[kind] else { continue }
                let wanted = try repository.merged(for: userID, kind: kind, numbers: numbers)
                let held = try repository.entries(of: userID, kind: kind, numbers: numbers)
                for number in numbers {
                    switch (held[number], wanted[number]) {
                    case (nil, nil):
                        continue
                    case (nil, let label?):
                        try repository.putEntry(
                            CallDirectoryEntry(kind: kind, number: number, label: label), of: userID)
                        try log(CallDirectoryEntry(kind: kind, number: number, label: label), added: true)
                    case (let label?, nil):
                        try repository.removeEntry(kind: kind, number: number, of: userID)
                        try log(CallDirectoryEntry(kind: kind, number: number, label: label), added: false)
                    case (let old?, let new?):
                        guard old != new else { continue }
                        try repository.putEntry(CallDirectoryEntry(kind: kind, number: number, label: new), of: userID)
                        try log(CallDirectoryEntry(kind: kind, number: number, label: old), added: false)
                        try log(CallDirectoryEntry(kind: kind, number: number, label: new), added: true)
                    }
                }
            }
            if let version {
                try repository.setVersion(version, of: userID)
                changed.append(userID)
            }
        }
        if !changed.isEmpty { try transaction.appendEvent(.callDirectoryChanged, to: changed) }
    }

    /// The whole list as an answer.
    static func whole(_ entries: [CallDirectoryEntry], version: Int64) -> CallDirectoryList {
        CallDirectoryList(
            version: version, incremental: false,
            blocking: CallDirectoryBlockingChanges(add: entries.filter { $0.kind == .blocking }.map(\.number).sorted()),
            identification: CallDirectoryIdentificationChanges(
                add: entries.filter { $0.kind == .identification }.map {
                    CallDirectoryIdentification(number: $0.number, label: $0.label ?? "")
                }
                .sorted { $0.number < $1.number }))
    }

    /// The net difference the logged changes make: what a phone held before the first of them
    /// (an entry whose first change is a removal was there, with that label) against what the
    /// last of them left. A relabelled entry is removed and added; one added and removed again
    /// is not mentioned.
    static func difference(_ changes: [CallDirectoryChange], version: Int64) -> CallDirectoryList {
        struct Key: Hashable {
            let kind: CallDirectoryKind
            let number: Int64
        }
        var before: [Key: String?] = [:]
        var after: [Key: String?] = [:]
        var order: [Key] = []
        for change in changes {
            let key = Key(kind: change.entry.kind, number: change.entry.number)
            if after[key] == nil {
                order.append(key)
                // Absent before the first change is an add; present (with its label) when a removal.
                before[key] = change.added ? .some(nil) : .some(.some(change.entry.label ?? ""))
            }
            after[key] = change.added ? .some(.some(change.entry.label ?? "")) : .some(nil)
        }
        var blocking = CallDirectoryBlockingChanges()
        var identification = CallDirectoryIdentificationChanges()
        for key in order {
            let was = before[key] ?? nil, now = after[key] ?? nil
            guard was != now else { continue }
            switch key.kind {
            case .blocking:
                if was != nil && now == nil { blocking.remove.append(key.number) }
                if was == nil && now != nil { blocking.add.append(key.number) }
            case .identification:
                if was != nil { identification.remove.append(key.number) }
                if let label = now {
                    identification.add.append(CallDirectoryIdentification(number: key.number, label: label))
                }
            }
        }
        blocking.add.sort()
        blocking.remove.sort()
        identification.add.sort { $0.number < $1.number }
        identification.remove.sort()
        return CallDirectoryList(
            version: version, incremental: true, blocking: blocking, identification: identification)
    }

    static func entries(
        of owner: CallDirectoryOwner, in repositories: any Repositories
    ) throws -> CallDirectoryOwnEntries {
        CallDirectoryOwnEntries(
            blocking: try repositories.callDirectory.sources(of: owner, kind: .blocking).map(\.number),
            identification: try repositories.callDirectory.sources(of: owner, kind: .identification).map {
                CallDirectoryIdentification(number: $0.number, label: $0.label ?? "")
            })
    }

    static func require(_ id: String, in repositories: any Repositories) throws -> StoredOrganization {
        guard let organization = try repositories.callDirectory.organization(id) else {
            throw APIError(.notFound, "no such organization: \(id)")
        }
        return organization
    }

    static func answer(_ organization: StoredOrganization, in repositories: any Repositories) throws -> Organization {
        let owner = CallDirectoryOwner.organization(organization.id)
        return Organization(
            id: organization.id, name: organization.name, createdAt: organization.createdAt,
            memberCount: try repositories.callDirectory.memberCount(of: organization.id),
            blockingCount: try repositories.callDirectory.sourceCount(of: owner, kind: .blocking),
            identificationCount: try repositories.callDirectory.sourceCount(of: owner, kind: .identification))
    }
}
