import Foundation

/// How a refresh ended.
public enum CallDirectoryRefresh: Sendable, Equatable {
    /// The list is as it was at `version`, and the system already holds it.
    case unchanged(version: Int64)
    /// A new list (or one the system did not hold yet) is stored and the extension was told
    /// to reload it.
    case reloaded(version: Int64, blocking: Int, identification: Int)
}

/// The app's side of a Call Directory extension (SPEC §11): keeps the user's list, and the
/// version it is at, in storage the extension shares, asks the server only for what changed
/// since, and has the system reload the extension when the list changed.
///
/// Refresh at launch, when the feed brings `call_directory_changed`, and after sign-in; clear
/// at sign-out, so the next user's phone does not label calls with the last one's list:
///
/// ```swift
/// let sync = CallDirectorySync(
///     client: CallDirectoryClient(client: client), userID: me.user.id,
///     storage: FileCallDirectoryStorage(appGroup: "group.com.example.phone")!,
///     reload: CallDirectoryReloader(extensionIdentifier: "com.example.phone.directory").reload)
/// if CallDirectorySync.needsRefresh(events) { _ = try await sync.refresh() }
/// ```
///
/// Refreshes run one at a time; one asked for while another runs starts after it, so a change
/// announced during a fetch is never missed.
public actor CallDirectorySync {
    private let client: CallDirectoryClient
    private let userID: String
    private let storage: any CallDirectoryStorage
    private let reload: @Sendable () async throws -> Void
    /// The refresh asked for last (finished or not): the next one waits for it.
    private var last: Task<CallDirectoryRefresh, any Error>?

    /// `reload` asks the system to run the extension again (in an app,
    /// `CXCallDirectoryManager.reloadExtension(withIdentifier:)`).
    public init(
        client: CallDirectoryClient, userID: String, storage: any CallDirectoryStorage,
        reload: @escaping @Sendable () async throws -> Void
    ) {
        self.client = client
        self.userID = userID
        self.storage = storage
        self.reload = reload
    }

    /// Whether a batch of the event feed says the list changed.
    public static func needsRefresh(_ events: [Event]) -> Bool {
        events.contains { $0.kind == .callDirectoryChanged }
    }

    /// Brings the stored list up to the server's: the changes since the stored version, or
    /// the whole list when the server no longer keeps them or the stored list is another
    /// user's. Reloads the extension when the list changed, or when the system does not hold
    /// the stored list yet (an earlier reload failed).
    @discardableResult
    public func refresh() async throws -> CallDirectoryRefresh {
        try await serialized { try await $0.fetchAndStore() }
    }

    /// Empties the stored list (sign-out) and reloads the extension, so the system drops the
    /// entries too.
    public func clear() async throws {
        _ = try await serialized { sync in
            try sync.storage.write(.empty(), to: .current)
            return try await sync.reloadIfBehind(.empty())
        }
    }

    /// The stored list, for a settings screen (nil before the first refresh).
    public nonisolated func stored() throws -> CallDirectoryContents? {
        try storage.read(.current)
    }

    /// Runs `work` after every refresh asked for before it (each waits for the one before, so
    /// they form a queue).
    private func serialized(
        _ work: @escaping @Sendable (isolated CallDirectorySync) async throws -> CallDirectoryRefresh
    ) async throws -> CallDirectoryRefresh {
        let previous = last
        let task = Task {
            _ = try? await previous?.value
            return try await work(self)
        }
        last = task
        return try await task.value
    }

    private func fetchAndStore() async throws -> CallDirectoryRefresh {
        let held = try? storage.read(.current)  // a damaged file is fetched again whole
        let base = held.flatMap { $0.userID == userID ? $0 : nil }
        let answer = try await client.list(since: base?.version)
        let current = try (base ?? .empty(userID: userID)).applying(answer, userID: userID)
        if current != held { try storage.write(current, to: .current) }
        return try await reloadIfBehind(current)
    }

    /// Reloads the extension unless the system already holds `current`.
    private func reloadIfBehind(_ current: CallDirectoryContents) async throws -> CallDirectoryRefresh {
        if let loaded = try? storage.read(.loaded), loaded.hasSameEntries(as: current) {
            return .unchanged(version: current.version)
        }
        do {
            try await reload()
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw CallDirectorySyncError.reloadFailed(String(describing: error))
        }
        return .reloaded(
            version: current.version, blocking: current.blocking.count, identification: current.identification.count)
    }
}

/// The extension's side (SwitchboardCallKit's `SwitchboardCallDirectoryProvider` uses it): from
/// the shared lists, the entries one request gives the system, and, once the request
/// completed, the record that the system holds them.
///
/// A request that fails or expires records nothing, so the next one sends the same changes.
public struct CallDirectoryLoader: Sendable {
    public let storage: any CallDirectoryStorage

    public init(storage: any CallDirectoryStorage) { self.storage = storage }

    /// The request for a context whose `isIncremental` is `systemIsIncremental`. A loaded
    /// list that cannot be read counts as unknown (everything is replaced); a current list
    /// that cannot be read is an error, so a damaged file never empties the system's entries.
    public func prepare(systemIsIncremental: Bool) throws(CallDirectorySyncError) -> CallDirectoryLoad {
        let current = try storage.read(.current) ?? .empty()
        let loaded = try? storage.read(.loaded)
        return .between(loaded: loaded, current: current, systemIsIncremental: systemIsIncremental)
    }

    /// Records that the system holds what `load` gave it.
    public func completed(_ load: CallDirectoryLoad) throws(CallDirectorySyncError) {
        try storage.write(load.contents, to: .loaded)
    }
}
