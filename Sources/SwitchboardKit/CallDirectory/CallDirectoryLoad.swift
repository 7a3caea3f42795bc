/// A user's Call Directory list as the phone keeps it (SPEC §11): each number once, sorted
/// ascending, at the server's version of it.
public struct CallDirectoryContents: Sendable, Equatable {
    /// Whose list it is: versions count per user, so another user's list starts from nothing.
    public var userID: String
    public var version: Int64
    public var blocking: [Int64]
    public var identification: [CallDirectoryIdentification]

    /// Sorts and de-duplicates the entries (a number labelled twice keeps the last label).
    public init(userID: String, version: Int64, blocking: [Int64], identification: [CallDirectoryIdentification]) {
        self.userID = userID
        self.version = version
        self.blocking = Array(Set(blocking)).sorted()
        self.identification = Self.sorted(identification)
    }

    /// Nothing listed: what a phone holds before its first sync and after signing out.
    public static func empty(userID: String = "") -> CallDirectoryContents {
        CallDirectoryContents(userID: userID, version: 0, blocking: [], identification: [])
    }

    /// The list after a server answer for `userID`: a whole list replaces this one; an
    /// incremental answer must be the changes since this list's version, and applies its
    /// removals, then its additions.
    public func applying(
        _ answer: CallDirectoryList, userID: String
    ) throws(CallDirectorySyncError) -> CallDirectoryContents {
        guard answer.incremental else {
            return CallDirectoryContents(
                userID: userID, version: answer.version, blocking: answer.blocking.add,
                identification: answer.identification.add)
        }
        guard userID == self.userID, answer.version >= version else {
            throw .badAnswer(
                "an incremental answer at version \(answer.version) does not follow the list held at \(version)")
        }
        var blocking = Set(self.blocking)
        blocking.subtract(answer.blocking.remove)
        blocking.formUnion(answer.blocking.add)
        var labels = Dictionary(identification.map { ($0.number, $0.label) }, uniquingKeysWith: { _, last in last })
        for number in answer.identification.remove { labels[number] = nil }
        for entry in answer.identification.add { labels[entry.number] = entry.label }
        return CallDirectoryContents(
            userID: userID, version: answer.version, blocking: Array(blocking),
            identification: labels.map { CallDirectoryIdentification(number: $0.key, label: $0.value) })
    }

    /// Whether the two list the same entries, whoever's and at whatever version.
    public func hasSameEntries(as other: CallDirectoryContents) -> Bool {
        blocking == other.blocking && identification == other.identification
    }

    static func sorted(_ entries: [CallDirectoryIdentification]) -> [CallDirectoryIdentification] {
        let labels = Dictionary(entries.map { ($0.number, $0.label) }, uniquingKeysWith: { _, last in last })
        return labels.keys.sorted().map { CallDirectoryIdentification(number: $0, label: labels[$0]!) }
    }
}

/// Why a sync or a load could not go on.
public enum CallDirectorySyncError: Error, Sendable, Equatable {
    /// The server's answer cannot apply to the list held (nothing was stored).
    case badAnswer(String)
    /// The shared storage could not be read or written (the app group is missing, the disk full).
    case storage(String)
    /// The list is stored, but the system did not reload the extension (it is disabled in
    /// Settings, or the reload failed); the next ``CallDirectorySync/refresh()`` tries again.
    case reloadFailed(String)
}

/// Where a Call Directory extension puts entries: the methods of CallKit's
/// `CXCallDirectoryExtensionContext`, which conforms as it is (SwitchboardCallKit), and of test
/// doubles. Additions of each kind must come in strictly ascending order.
public protocol CallDirectoryEntrySink {
    func addBlockingEntry(withNextSequentialPhoneNumber phoneNumber: Int64)
    func addIdentificationEntry(withNextSequentialPhoneNumber phoneNumber: Int64, label: String)
    func removeBlockingEntry(withPhoneNumber phoneNumber: Int64)
    func removeIdentificationEntry(withPhoneNumber phoneNumber: Int64)
    func removeAllBlockingEntries()
    func removeAllIdentificationEntries()
}

/// What one extension request gives the system to turn the list it holds into `contents`.
///
/// Three forms, by what the system asks for and what the phone knows it holds:
/// - **full** (`context.isIncremental == false`: the system holds nothing) — every entry added;
/// - **replacement** (incremental, but what the system holds is unknown, or the changes would be
///   more than the list) — everything removed, then every entry added;
/// - **incremental** — only the differences: removals (a relabelled number is removed and
///   added again), then additions.
///
/// Every list is sorted ascending, the order CallKit requires.
public struct CallDirectoryLoad: Sendable, Equatable {
    public enum Form: String, Sendable, Equatable { case full, replacement, incremental }

    public var form: Form
    public var blockingRemovals: [Int64]
    public var identificationRemovals: [Int64]
    public var blockingAdditions: [Int64]
    public var identificationAdditions: [CallDirectoryIdentification]
    /// What the system holds once the request completes.
    public var contents: CallDirectoryContents

    /// Removals and additions, all told.
    public var changeCount: Int {
        blockingRemovals.count + identificationRemovals.count + blockingAdditions.count + identificationAdditions.count
    }

    /// The request that turns `loaded` (what the system holds after the last completed request,
    /// nil when unknown) into `current`. `systemIsIncremental` is the context's `isIncremental`.
    public static func between(
        loaded: CallDirectoryContents?, current: CallDirectoryContents, systemIsIncremental: Bool
    ) -> CallDirectoryLoad {
        let whole = CallDirectoryLoad(
            form: .full, blockingRemovals: [], identificationRemovals: [], blockingAdditions: current.blocking,
            identificationAdditions: current.identification, contents: current)
        guard systemIsIncremental else { return whole }
        var replacement = whole
        replacement.form = .replacement
        guard let loaded else { return replacement }
        let blocking = difference(from: loaded.blocking, to: current.blocking, key: { $0 })
        let identification = difference(from: loaded.identification, to: current.identification, key: \.number)
        let incremental = CallDirectoryLoad(
            form: .incremental, blockingRemovals: blocking.removed,
            identificationRemovals: identification.removed.map(\.number),
            blockingAdditions: blocking.added, identificationAdditions: identification.added, contents: current)
        // Removing everything is two calls: cheaper than removals beyond the list's size.
        return incremental.changeCount > whole.changeCount + 2 ? replacement : incremental
    }

    /// Hands the request's entries to the extension context: removals first, then additions,
    /// each kind ascending.
    public func apply(to sink: some CallDirectoryEntrySink) {
        if form == .replacement {
            sink.removeAllBlockingEntries()
            sink.removeAllIdentificationEntries()
        }
        for number in blockingRemovals { sink.removeBlockingEntry(withPhoneNumber: number) }
        for number in identificationRemovals { sink.removeIdentificationEntry(withPhoneNumber: number) }
        for number in blockingAdditions { sink.addBlockingEntry(withNextSequentialPhoneNumber: number) }
        for entry in identificationAdditions {
            sink.addIdentificationEntry(withNextSequentialPhoneNumber: entry.number, label: entry.label)
        }
    }

    /// The entries of `old` not in `new` and of `new` not in `old` (an entry whose key stays
    /// but whose value changed is in both), each ascending: one merge pass over sorted lists.
    static func difference<Entry: Equatable>(
        from old: [Entry], to new: [Entry], key: (Entry) -> Int64
    ) -> (removed: [Entry], added: [Entry]) {
        var removed: [Entry] = [], added: [Entry] = []
        var i = old.startIndex, j = new.startIndex
        while i < old.endIndex || j < new.endIndex {
            if j == new.endIndex || (i < old.endIndex && key(old[i]) < key(new[j])) {
                removed.append(old[i])
                i += 1
            } else if i == old.endIndex || key(new[j]) < key(old[i]) {
                added.append(new[j])
                j += 1
            } else {
                if old[i] != new[j] {
                    removed.append(old[i])
                    added.append(new[j])
                }
                i += 1
                j += 1
            }
        }
        return (removed, added)
    }
}
