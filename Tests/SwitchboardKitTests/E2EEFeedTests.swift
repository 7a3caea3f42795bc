import Foundation
import Synchronization
import Testing
import SwitchboardKit

/// One device's E2EE queue in one scope, as the server keeps it: items by sequence, `pageSize`
/// per page, deleted once a request acknowledges them (`after`), 410 for an `after` below the
/// acknowledged one. A request can be answered otherwise by its number (0 first).
final class SimulatedE2EEQueue: Sendable {
    enum Reply: Sendable {
        case answer(status: Int, body: String)
        case transportFailure
    }

    private struct State {
        var sequences: [Int64]
        var acknowledged: Int64 = 0
        var overrides: [Int: Reply] = [:]
        var requests = 0
    }

    private let state: Mutex<State>
    let pageSize: Int

    init(sequences: [Int64], pageSize: Int, acknowledged: Int64 = 0, overrides: [Int: Reply] = [:]) {
        state = Mutex(State(sequences: sequences, acknowledged: acknowledged, overrides: overrides))
        self.pageSize = pageSize
    }

    var acknowledged: Int64 { state.withLock { $0.acknowledged } }

    static func item(_ sequence: Int64) -> E2EEItem {
        E2EEItem(
            sequence: sequence, messageId: "m\(sequence)", kind: "application", senderUserId: "u2",
            senderDeviceId: "d2",
            ciphertext: "AAEC", conversationId: nil, groupId: "g", createdAt: "2026-12-01T10:00:00.000Z")
    }

    static func pageBody(_ sequences: [Int64], cursor: Int64, hasMore: Bool = false) -> String {
        let page = E2EEEventsPage(items: sequences.map(item), cursor: cursor, hasMore: hasMore)
        return String(decoding: try! JSONEncoder().encode(page), as: UTF8.self)
    }

    func respond(to request: RecordedRequest) throws -> (status: Int, body: String) {
        let reply = state.withLock { state -> Reply in
            defer { state.requests += 1 }
            if let reply = state.overrides[state.requests] { return reply }
            guard request.method == "GET", let after = request.queryValue("after").flatMap(Int64.init) else {
                return .answer(status: 400, body: errorBody("VALIDATION_FAILED", field: "after"))
            }
            if after < state.acknowledged { return .answer(status: 410, body: errorBody("CURSOR_EXPIRED")) }
            state.acknowledged = after
            state.sequences.removeAll { $0 <= after }
            let batch = Array(state.sequences.prefix(pageSize))
            return .answer(
                status: 200,
                body: Self.pageBody(batch, cursor: batch.last ?? after, hasMore: state.sequences.count > batch.count))
        }
        switch reply {
        case .answer(let status, let body): return (status, body)
        case .transportFailure: throw URLError(.networkConnectionLost)
        }
    }
}

/// Records the batches a handler was given and the stored cursor at the moment of each.
final class RecordingBatchHandler: Sendable {
    private let log = Mutex<(batches: [[Int64]], storedCursors: [Int64?])>(([], []))
    let store: any E2EECursorStore
    let scope: E2EEScope
    let deviceID: String
    /// The first sequence of a batch the handler fails once.
    let failingOnce: Int64?
    private let failed = Mutex(false)

    struct DiskFull: Error {}

    init(store: any E2EECursorStore, scope: E2EEScope, deviceID: String, failingOnce: Int64? = nil) {
        self.store = store
        self.scope = scope
        self.deviceID = deviceID
        self.failingOnce = failingOnce
    }

    var batches: [[Int64]] { log.withLock { $0.batches } }
    var storedCursors: [Int64?] { log.withLock { $0.storedCursors } }

    func handle(_ items: [E2EEItem]) async throws {
        let stored = await store.load(scope: scope, deviceID: deviceID)
        log.withLock {
            $0.batches.append(items.map(\.sequence))
            $0.storedCursors.append(stored)
        }
        if let failingOnce, items.first?.sequence == failingOnce,
            failed.withLock({ done in
                defer { done = true }
                return !done
            })
        {
            throw DiskFull()
        }
    }
}

/// The E2EE API requests, and the feed that reads a device queue: a cursor that moves only
/// after the handler returned, the batch limit, and the failures that stop a sync.
@Suite("E2EEFeed", .timeLimit(.minutes(1)))
struct E2EEFeedTests {
    static let scope = E2EEScope.group("g")
    static let device = "d1"

    struct Fixture {
        let queue: SimulatedE2EEQueue
        let transport: ScriptedTransport
        let store: InMemoryE2EECursorStore
        let handler: RecordingBatchHandler
        let client: SwitchboardClient

        init(
            sequences: [Int64], pageSize: Int = 100, acknowledged: Int64 = 0,
            overrides: [Int: SimulatedE2EEQueue.Reply] = [:],
            failingOnce: Int64? = nil
        ) {
            let queue = SimulatedE2EEQueue(
                sequences: sequences, pageSize: pageSize, acknowledged: acknowledged, overrides: overrides)
            self.queue = queue
            transport = ScriptedTransport { try queue.respond(to: $0) }
            store = InMemoryE2EECursorStore()
            handler = RecordingBatchHandler(
                store: store, scope: E2EEFeedTests.scope, deviceID: E2EEFeedTests.device, failingOnce: failingOnce)
            client = makeClient(transport)
        }

        func feed(maxBatches: Int = 100, deviceID: String = E2EEFeedTests.device) -> E2EEFeed {
            E2EEFeed(
                client: client, deviceID: deviceID, scope: E2EEFeedTests.scope, cursorStore: store,
                maxBatches: maxBatches)
        }

        func sync(maxBatches: Int = 100) async throws -> E2EESyncResult {
            let handler = handler
            return try await feed(maxBatches: maxBatches).sync { try await handler.handle($0) }
        }

        var stored: Int64? {
            get async { await store.load(scope: E2EEFeedTests.scope, deviceID: E2EEFeedTests.device) }
        }

        var afters: [String?] { transport.requests.map { $0.queryValue("after") } }
    }

    // MARK: API requests

    /// Every E2EE method's method, path (ids percent-encoded), query and body.
    @Test func clientRequestShapes() async throws {
        let device = #"{"deviceId":"d/1","userId":"u1","createdAt":"2026-12-01T10:00:00.000Z"}"#
        let transport = ScriptedTransport { request in
            switch (request.method, request.path) {
            case ("POST", "/e2ee/devices"): (201, device)
            case ("DELETE", _): (204, "")
            case (_, let path) where path.hasSuffix("/messages"):
                (
                    201,
                    #"{"messageId":"m1","deliveries":[{"deviceId":"d2","sequence":7}],"createdAt":"2026-12-01T10:00:00.000Z"}"#
                )
            case (_, let path) where path.hasSuffix("/events"): (200, SimulatedE2EEQueue.pageBody([6], cursor: 6))
            default: (200, #"{"devices":[\#(device)]}"#)
            }
        }
        let e2ee = E2EEClient(client: makeClient(transport))

        let registered = try await e2ee.registerDevice(id: "d/1")
        #expect(registered.deviceId == "d/1")
        #expect(transport.requests.last?.line == "POST /e2ee/devices")
        #expect(transport.requests.last?.jsonBody()?["deviceId"] as? String == "d/1")

        #expect(try await e2ee.devices().map(\.userId) == ["u1"])
        #expect(transport.requests.last?.line == "GET /e2ee/devices")

        #expect(try await e2ee.devices(in: .group("g 1")).count == 1)
        #expect(transport.requests.last?.line == "GET /e2ee/groups/g%201/devices")
        _ = try await e2ee.devices(in: .conversation("c+1"))
        #expect(transport.requests.last?.line == "GET /e2ee/conversations/c%2B1/devices")

        try await e2ee.unregisterDevice(id: "d/1")
        #expect(transport.requests.last?.line == "DELETE /e2ee/devices/d%2F1")

        let message = SendE2EEMessage(
            senderDeviceId: "d/1", kind: "commit", recipients: [E2EERecipient(deviceId: "d2", ciphertext: "AAEC")],
            clientId: "k1")
        let result = try await e2ee.send(message, in: .conversation("c/1"))
        #expect(result.deliveries == [E2EEDelivery(deviceId: "d2", sequence: 7)])
        let sent = try #require(transport.requests.last)
        #expect(sent.line == "POST /e2ee/conversations/c%2F1/messages" && sent.repeatable)
        let body = try #require(sent.body)
        #expect(try JSONDecoder().decode(SendE2EEMessage.self, from: body) == message)
        // Without an idempotency key a send must not go twice.
        var once = message
        once.clientId = nil
        _ = try await e2ee.send(once, in: .group("g"))
        #expect(transport.requests.last?.repeatable == false)

        let page = try await e2ee.events(in: .group("g/2"), deviceID: "d+1", after: 5)
        #expect(page.cursor == 6 && page.items.first?.sequence == 6)
        #expect(transport.requests.last?.line == "GET /e2ee/groups/g%2F2/events?deviceId=d%2B1&after=5")
    }

    // MARK: Cursor

    /// A sync starts at 0 and saves each page's cursor only once the handler returned from
    /// it; an empty page (which also acknowledges the last batch) ends it, caught up.
    @Test func theCursorAdvancesOnlyAfterEachHandledBatch() async throws {
        let fixture = Fixture(sequences: [1, 2, 3, 4, 5], pageSize: 2)
        let result = try await fixture.sync()
        #expect(result == .caughtUp(cursor: 5, batches: 3))
        #expect(fixture.handler.batches == [[1, 2], [3, 4], [5]])
        // While handling a batch the store still held the previous cursor.
        #expect(fixture.handler.storedCursors == [nil, 2, 4])
        #expect(await fixture.stored == 5)
        #expect(fixture.afters == ["0", "2", "4", "5"])
        #expect(
            fixture.transport.requests.allSatisfy {
                $0.queryValue("deviceId") == Self.device && $0.path == "/e2ee/groups/g/events"
            })
        #expect(fixture.queue.acknowledged == 5)
    }

    /// An empty queue: one request, no handler call, nothing saved.
    @Test func anEmptyQueueIsCaughtUpAtOnce() async throws {
        let fixture = Fixture(sequences: [])
        #expect(try await fixture.sync() == .caughtUp(cursor: 0, batches: 0))
        #expect(fixture.handler.batches.isEmpty)
        #expect(await fixture.stored == nil)
        #expect(fixture.afters == ["0"])
    }

    /// A handler that throws stops the sync with the cursor where it was; the next sync hands
    /// the same items again, so a failed decrypt or store never skips one.
    @Test func aThrowingHandlerLeavesTheCursor() async throws {
        let fixture = Fixture(sequences: [1, 2, 3, 4], pageSize: 2, failingOnce: 3)
        var failure: E2EEFeedError?
        do {
            _ = try await fixture.sync()
        } catch let error as E2EEFeedError {
            failure = error
        }
        guard case .handlerFailed(let cursor, let underlying)? = failure else {
            Issue.record("expected handlerFailed, got \(String(describing: failure))")
            return
        }
        #expect(cursor == 2 && underlying.contains("DiskFull"))
        #expect(failure?.code == "HANDLER_FAILED")
        #expect(await fixture.stored == 2)
        #expect(fixture.queue.acknowledged == 2)

        #expect(try await fixture.sync() == .caughtUp(cursor: 4, batches: 1))
        #expect(fixture.handler.batches == [[1, 2], [3, 4], [3, 4]])
        #expect(await fixture.stored == 4)
    }

    /// A failure on the very first batch saves nothing at all.
    @Test func aFirstBatchThatFailsSavesNothing() async throws {
        let fixture = Fixture(sequences: [1, 2], failingOnce: 1)
        await #expect(throws: E2EEFeedError.self) { _ = try await fixture.sync() }
        #expect(await fixture.stored == nil)
        #expect(try await fixture.sync() == .caughtUp(cursor: 2, batches: 1))
        #expect(fixture.handler.batches == [[1, 2], [1, 2]])
    }

    /// A transport failure propagates and leaves the cursor at the last handled batch.
    @Test func aTransportFailureLeavesTheCursor() async throws {
        let fixture = Fixture(sequences: [1, 2, 3, 4], pageSize: 2, overrides: [1: .transportFailure])
        let error = await #expect(throws: SwitchboardAPIError.self) { _ = try await fixture.sync() }
        #expect(error?.code == .transport)
        #expect(await fixture.stored == 2)
        #expect(try await fixture.sync() == .caughtUp(cursor: 4, batches: 1))
        #expect(fixture.handler.batches == [[1, 2], [3, 4]])
    }

    // MARK: Batch limit

    /// 250 waiting pages of one item: each sync handles 100 and says more remain, the third
    /// the last 50 and is caught up; every item is handed once, in order.
    @Test func oneSyncHandlesAtMostAHundredBatches() async throws {
        let fixture = Fixture(sequences: Array(1...250), pageSize: 1)
        #expect(try await fixture.sync() == .moreRemain(cursor: 100, batches: 100))
        #expect(fixture.transport.requests.count == 100)
        #expect(await fixture.stored == 100)
        #expect(try await fixture.sync() == .moreRemain(cursor: 200, batches: 100))
        #expect(fixture.transport.requests.count == 200)
        #expect(try await fixture.sync() == .caughtUp(cursor: 250, batches: 50))
        #expect(fixture.transport.requests.count == 251)

        let handed = fixture.handler.batches.flatMap { $0 }
        #expect(handed.count == 250)
        #expect(handed.first == 1 && handed.last == 250)
        #expect(zip(handed, handed.dropFirst()).allSatisfy { $0 + 1 == $1 })
        #expect(await fixture.stored == 250)
    }

    /// A small limit stops early with more remaining; a limit reached on the last page is
    /// caught up.
    @Test func aSmallBatchLimit() async throws {
        let more = Fixture(sequences: Array(1...10), pageSize: 2)
        #expect(try await more.sync(maxBatches: 3) == .moreRemain(cursor: 6, batches: 3))
        #expect(more.afters == ["0", "2", "4"])
        #expect(try await more.sync(maxBatches: 3) == .caughtUp(cursor: 10, batches: 2))
        #expect(more.afters.count == 6 && more.afters.last == "10")

        let exact = Fixture(sequences: Array(1...6), pageSize: 2)
        #expect(try await exact.sync(maxBatches: 3) == .caughtUp(cursor: 6, batches: 3))
        #expect(exact.transport.requests.count == 3)
        #expect(await exact.stored == 6)
    }

    /// `hasMore` false: the sync acknowledges the batch with one more request and is caught up.
    @Test func caughtUpWhenNothingMoreWaits() async throws {
        let fixture = Fixture(sequences: [1, 2, 3], pageSize: 5)
        #expect(try await fixture.sync() == .caughtUp(cursor: 3, batches: 1))
        #expect(fixture.afters == ["0", "3"])
        #expect(fixture.queue.acknowledged == 3)
    }

    // MARK: Stores

    /// Cursors are kept per (scope, device): another device of the same scope, or the same
    /// device id in another scope, starts from its own.
    @Test func cursorsArePerScopeAndDevice() async throws {
        let store = InMemoryE2EECursorStore()
        await store.save(7, scope: .group("a"), deviceID: "d1")
        #expect(await store.load(scope: .group("a"), deviceID: "d1") == 7)
        #expect(await store.load(scope: .group("a"), deviceID: "d2") == nil)
        #expect(await store.load(scope: .conversation("a"), deviceID: "d1") == nil)
        await store.save(3, scope: .conversation("a"), deviceID: "d1")
        #expect(await store.load(scope: .group("a"), deviceID: "d1") == 7)

        // Device d2 of the same scope has its own queue (requests 2 and 3 answer for it).
        let fixture = Fixture(
            sequences: [1, 2],
            overrides: [
                2: .answer(status: 200, body: SimulatedE2EEQueue.pageBody([1], cursor: 1)),
                3: .answer(status: 200, body: SimulatedE2EEQueue.pageBody([], cursor: 1)),
            ])
        #expect(try await fixture.sync() == .caughtUp(cursor: 2, batches: 1))
        #expect(await fixture.stored == 2)
        let other = fixture.feed(deviceID: "d2")
        #expect(try await other.sync { _ in } == .caughtUp(cursor: 1, batches: 1))
        let asked = fixture.transport.requests.dropFirst(2).map {
            "\($0.queryValue("deviceId") ?? "-") \($0.queryValue("after") ?? "-")"
        }
        #expect(asked == ["d2 0", "d2 1"])
        #expect(await fixture.store.load(scope: Self.scope, deviceID: "d2") == 1)
        #expect(await fixture.stored == 2)
        #expect(await fixture.store.load(scope: .conversation("g"), deviceID: Self.device) == nil)
    }

    // MARK: Failures

    /// A saved cursor below what the server already deleted is `cursorExpired`: the app must
    /// rejoin; the cursor is left for it to replace.
    @Test func anExpiredCursorAsksForARejoin() async throws {
        let fixture = Fixture(sequences: [6, 7], acknowledged: 5)
        await fixture.store.save(3, scope: Self.scope, deviceID: Self.device)
        await #expect(throws: E2EEFeedError.cursorExpired) { _ = try await fixture.sync() }
        #expect(fixture.handler.batches.isEmpty)
        #expect(await fixture.stored == 3)
        #expect(E2EEFeedError.cursorExpired.code == "CURSOR_EXPIRED")
    }

    /// 403 (another user's device, not a participant) and 404 are `notAllowed`, with the server's error.
    @Test(arguments: [(403, "NOT_YOUR_DEVICE"), (403, "NOT_FRIENDS"), (404, "NOT_FOUND")])
    func refusalsAreNotAllowed(status: Int, code: String) async throws {
        let fixture = Fixture(sequences: [1], overrides: [0: .answer(status: status, body: errorBody(code))])
        var failure: E2EEFeedError?
        do {
            _ = try await fixture.sync()
        } catch let error as E2EEFeedError {
            failure = error
        }
        guard case .notAllowed(let error)? = failure else {
            Issue.record("expected notAllowed, got \(String(describing: failure))")
            return
        }
        #expect(error.status == status && error.code.rawValue == code && failure?.code == code)
        #expect(fixture.handler.batches.isEmpty)
    }

    /// A page that would move the cursor backward, repeat or skip items is refused: nothing is
    /// handed, nothing saved.
    @Test(arguments: [
        SimulatedE2EEQueue.pageBody([], cursor: 3),  // behind the cursor, empty
        SimulatedE2EEQueue.pageBody([6, 7], cursor: 4),  // behind the cursor
        SimulatedE2EEQueue.pageBody([5, 6], cursor: 6),  // an item already handled
        SimulatedE2EEQueue.pageBody([6, 8, 7], cursor: 8),  // not ascending
        SimulatedE2EEQueue.pageBody([6, 6], cursor: 6),  // an item twice
        SimulatedE2EEQueue.pageBody([6, 7], cursor: 9),  // would acknowledge 8 and 9 unseen
    ])
    func aBadPageIsRefused(body: String) async throws {
        let fixture = Fixture(sequences: [6, 7, 8], acknowledged: 5, overrides: [0: .answer(status: 200, body: body)])
        await fixture.store.save(5, scope: Self.scope, deviceID: Self.device)
        var failure: E2EEFeedError?
        do {
            _ = try await fixture.sync()
        } catch let error as E2EEFeedError {
            failure = error
        }
        guard case .badPage? = failure else {
            Issue.record("expected badPage, got \(String(describing: failure))")
            return
        }
        #expect(failure?.code == "BAD_PAGE")
        #expect(fixture.handler.batches.isEmpty)
        #expect(await fixture.stored == 5)
        #expect(fixture.transport.requests.count == 1)
    }

    /// A bad page in the middle stops the sync after the batches before it.
    @Test func aBadPageAfterGoodOnesKeepsTheirCursor() async throws {
        let fixture = Fixture(
            sequences: [1, 2, 3, 4], pageSize: 2,
            overrides: [1: .answer(status: 200, body: SimulatedE2EEQueue.pageBody([1], cursor: 1))])
        await #expect(throws: E2EEFeedError.self) { _ = try await fixture.sync() }
        #expect(fixture.handler.batches == [[1, 2]])
        #expect(await fixture.stored == 2)
    }

    // MARK: Event feed

    /// The scopes with new items are those of the `e2ee` events, each once; other kinds are ignored.
    @Test func scopesOfE2EEEvents() {
        let at = "2026-12-01T10:00:00.000Z"
        let events = [
            Event(id: 1, kind: EventKind.e2ee, groupId: "g1", createdAt: at),
            Event(id: 2, kind: EventKind.message, conversationId: "c9", createdAt: at),
            Event(id: 3, kind: EventKind.e2ee, conversationId: "c1", createdAt: at),
            Event(id: 4, kind: EventKind.e2ee, groupId: "g1", createdAt: at),
            Event(id: 5, kind: EventKind.liveLocationChanged, groupId: "g2", createdAt: at),
            Event(id: 6, kind: EventKind.e2ee, createdAt: at),
        ]
        #expect(E2EEFeed.scopes(in: events) == [.group("g1"), .conversation("c1")])
        #expect(E2EEFeed.scopes(in: []).isEmpty)
    }
}
