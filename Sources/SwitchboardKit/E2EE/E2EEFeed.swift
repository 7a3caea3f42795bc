import Foundation

/// Where E2EE queue cursors survive app restarts, one per (scope, device); kept apart from
/// the ``EventCursorStore`` of the ordinary event feed.
public protocol E2EECursorStore: Sendable {
    /// The last sequence whose items the app stored, or nil before the first.
    func load(scope: E2EEScope, deviceID: String) async -> Int64?
    /// Records that every item up to `cursor` is stored.
    func save(_ cursor: Int64, scope: E2EEScope, deviceID: String) async
}

/// An E2EE cursor store in memory (tests, previews).
public final class InMemoryE2EECursorStore: E2EECursorStore {
    private struct Key: Hashable {
        let scope: E2EEScope
        let deviceID: String
    }

    private let cursors = LockedState<[Key: Int64]>([:])

    /// An empty store.
    public init() {}

    public func load(scope: E2EEScope, deviceID: String) async -> Int64? {
        cursors.withLock { $0[Key(scope: scope, deviceID: deviceID)] }
    }

    public func save(_ cursor: Int64, scope: E2EEScope, deviceID: String) async {
        cursors.withLock { $0[Key(scope: scope, deviceID: deviceID)] = cursor }
    }
}

/// How a sync ended.
public enum E2EESyncResult: Sendable, Equatable {
    /// The queue is empty after `cursor`; `batches` were handled.
    case caughtUp(cursor: Int64, batches: Int)
    /// The batch limit was reached with more items waiting: sync again (soon, or at once).
    case moreRemain(cursor: Int64, batches: Int)
}

/// Why a sync stopped. In every case the cursor stays where the last handled batch left it.
public enum E2EEFeedError: Error, Sendable, Equatable {
    /// The handler threw for the batch after `cursor`; nothing of it was acknowledged, and the
    /// next sync hands the same items again.
    case handlerFailed(cursor: Int64, underlying: String)
    /// The server already deleted items past the saved cursor (410 `CURSOR_EXPIRED`): this
    /// device missed ciphertext and must rejoin or resync its MLS state, then save the cursor
    /// of its new start.
    case cursorExpired
    /// Not this user's device, not a participant, or no such conversation or group (403, 404).
    case notAllowed(SwitchboardAPIError)
    /// The server answered a page that would skip or repeat items (unordered, not after the
    /// cursor, or a cursor that is not its last item's); nothing of it was handed or saved.
    case badPage(reason: String)

    /// A stable code: the server's for ``cursorExpired`` and ``notAllowed(_:)``, the SDK's
    /// own for the others.
    public var code: String {
        switch self {
        case .handlerFailed: "HANDLER_FAILED"
        case .cursorExpired: ErrorCode.cursorExpired.rawValue
        case .notAllowed(let error): error.code.rawValue
        case .badPage: "BAD_PAGE"
        }
    }
}

/// Reads one device's E2EE queue in one conversation or group (SPEC §9), advancing its cursor
/// only after the app confirmed the items were processed and stored.
///
/// A sync reads a page after the saved cursor (0 before the first), hands its items to the
/// handler and, only when the handler returns, saves the page's cursor and reads on; the next
/// request acknowledges the batch (the server deletes it). It ends when a page is empty, or
/// after `maxBatches` batches. If the handler throws (a failed decrypt, a full disk), nothing
/// is saved and the next sync hands the same items again: no item is ever skipped.
///
/// ```swift
/// let feed = E2EEFeed(client: client, deviceID: deviceID, scope: .group(groupID), cursorStore: store)
/// do {
///     var result = try await feed.sync { items in
///         for item in items { try mls.process(item) }   // throws: the batch comes again
///         try database.commit()                          // stored before the cursor moves
///     }
///     while case .moreRemain = result { result = try await feed.sync(process) }
/// } catch E2EEFeedError.cursorExpired {
///     try await rejoinGroup()
/// }
/// ```
///
/// Run one sync per (scope, device) at a time; start one when the event feed reports new items
/// (``scopes(in:)``).
public struct E2EEFeed: Sendable {
    let client: E2EEClient
    let deviceID: String
    let scope: E2EEScope
    let cursorStore: any E2EECursorStore
    let maxBatches: Int

    /// - Parameters:
    ///   - deviceID: this device's E2EE id, as registered (``E2EEClient/registerDevice(id:)``).
    ///   - maxBatches: how many batches (of at most 100 items) one sync handles at most; ≥ 1.
    public init(
        client: SwitchboardClient, deviceID: String, scope: E2EEScope, cursorStore: any E2EECursorStore,
        maxBatches: Int = 100
    ) {
        precondition(maxBatches >= 1, "E2EEFeed needs maxBatches ≥ 1")
        self.client = E2EEClient(client: client)
        self.deviceID = deviceID
        self.scope = scope
        self.cursorStore = cursorStore
        self.maxBatches = maxBatches
    }

    /// Hands the waiting items to `handler`, batch by batch in ascending `sequence`, saving the
    /// cursor after each batch the handler returned from.
    ///
    /// - Throws: ``E2EEFeedError`` as documented there; a transport or other server error as
    ///   ``SwitchboardAPIError``, and `CancellationError` as it is. The cursor stays at the last
    ///   handled batch whatever is thrown.
    public func sync(_ handler: @Sendable ([E2EEItem]) async throws -> Void) async throws -> E2EESyncResult {
        var cursor = await cursorStore.load(scope: scope, deviceID: deviceID) ?? 0
        var batches = 0
        while true {
            try Task.checkCancellation()
            let page = try await fetch(after: cursor)
            try Self.check(page, after: cursor)
            if page.items.isEmpty { return .caughtUp(cursor: cursor, batches: batches) }
            batches += 1
            do {
                try await handler(page.items)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw E2EEFeedError.handlerFailed(cursor: cursor, underlying: String(describing: error))
            }
            await cursorStore.save(page.cursor, scope: scope, deviceID: deviceID)
            cursor = page.cursor
            if batches >= maxBatches {
                return page.hasMore
                    ? .moreRemain(cursor: cursor, batches: batches) : .caughtUp(cursor: cursor, batches: batches)
            }
        }
    }

    /// The scopes whose queues have new items, from a batch of the ordinary event feed (kind
    /// `e2ee`): sync each of them.
    ///
    /// ```swift
    /// case .events(let events):
    ///     for scope in E2EEFeed.scopes(in: events) { try await feed(for: scope).sync(process) }
    /// ```
    public static func scopes(in events: [Event]) -> Set<E2EEScope> {
        var scopes = Set<E2EEScope>()
        for event in events where event.kind == .e2ee {
            if let id = event.conversationId { scopes.insert(.conversation(id)) }
            if let id = event.groupId { scopes.insert(.group(id)) }
        }
        return scopes
    }

    // MARK: Helpers

    private func fetch(after cursor: Int64) async throws -> E2EEEventsPage {
        do {
            return try await client.events(in: scope, deviceID: deviceID, after: cursor)
        } catch let error as SwitchboardAPIError where error.status == 410 {
            throw E2EEFeedError.cursorExpired
        } catch let error as SwitchboardAPIError where error.status == 403 || error.status == 404 {
            throw E2EEFeedError.notAllowed(error)
        }
    }

    /// Refuses a page that would move the cursor backward, skip items never handed to the app
    /// or hand an item twice.
    static func check(_ page: E2EEEventsPage, after cursor: Int64) throws {
        guard page.cursor >= cursor else {
            throw E2EEFeedError.badPage(reason: "the page's cursor \(page.cursor) is behind the cursor \(cursor)")
        }
        guard let first = page.items.first, let last = page.items.last else { return }
        guard first.sequence > cursor else {
            throw E2EEFeedError.badPage(reason: "item \(first.sequence) is not after the cursor \(cursor)")
        }
        for (earlier, later) in zip(page.items, page.items.dropFirst()) where later.sequence <= earlier.sequence {
            throw E2EEFeedError.badPage(reason: "item \(later.sequence) follows item \(earlier.sequence)")
        }
        guard page.cursor == last.sequence else {
            throw E2EEFeedError.badPage(
                reason: "the page's cursor \(page.cursor) is not its last item's sequence \(last.sequence)")
        }
    }
}
