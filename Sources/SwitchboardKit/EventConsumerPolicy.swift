import Foundation
import SwitchboardWire

/// The decisions of the event consumer (SPEC §4 rule 10), as a pure state machine: it owns the
/// cursor and says what to do next; the I/O loop around it only performs the actions.
///
/// Rules: long polls with `wait=20`; 401 ends the session; any other failure retries after
/// about 3 s with jitter; a response that belongs to an older token is discarded; the cursor
/// advances only after the app has handled a batch; `CURSOR_EXPIRED` (410) asks the app to take
/// a new snapshot and resume from its cursor.
public struct EventConsumerPolicy: Sendable, Equatable {
    /// The server's hold time for each long poll.
    public static let wait = 20
    /// The pause after a failure, before jitter.
    public static let retryDelay = 3.0
    /// The longest pause before a snapshot that follows expired cursors in a row.
    public static let snapshotPauseCeiling = 30.0

    /// What a long poll came back with.
    public enum Outcome: Sendable, Equatable {
        case events(EventsPage)
        case unauthorized
        case cursorExpired
        case failure
    }

    /// What the loop does next.
    public enum Action: Sendable, Equatable {
        /// Send `GET /events?after=…&wait=…` with the token of `generation`.
        case poll(after: Int64, wait: Int, generation: Int)
        /// Pause, then poll.
        case retry(afterSeconds: Double, after: Int64, generation: Int)
        /// Give these events to the app; call `handled(through:)` when it is done with them.
        case handle([Event], cursor: Int64)
        /// The token is no longer valid: clear the session and stop.
        case endSession
        /// The cursor predates the server's retention: take a new snapshot, then `resume(from:)`.
        case resnapshot
        /// A response for an older token: drop it, nothing else to do.
        case discard
        /// Stopped (no session).
        case idle
    }

    /// The last event id the app has handled.
    public private(set) var cursor: Int64
    /// Bumped whenever the token changes; responses carry the generation they were sent with.
    public private(set) var generation = 0
    /// Expired cursors in a row, with no page of events accepted between them.
    public private(set) var expiredInARow = 0
    /// How long (seconds) to wait before the snapshot the last `.resnapshot` asked for: none
    /// after the first expiry, then about 1, 2, 4 … up to ``snapshotPauseCeiling`` seconds, so
    /// a server that keeps pruning past each new cursor is not asked again and again at once.
    public private(set) var snapshotPause = 0.0
    private var handling: Int64?
    private var running = false

    /// Starts from a snapshot's cursor (`eventCursor` of login or `/me`).
    public init(cursor: Int64) {
        self.cursor = cursor
    }

    /// Begins polling with the current token.
    public mutating func start() -> Action {
        running = true
        return poll()
    }

    /// The token changed (a new login): responses sent with the old one will be discarded.
    public mutating func tokenChanged(cursor newCursor: Int64) -> Action {
        generation += 1
        cursor = newCursor
        handling = nil
        running = true
        return poll()
    }

    /// A long poll sent with `sentGeneration` came back. `jitter` is in 0..<1.
    public mutating func received(_ outcome: Outcome, sentGeneration: Int, jitter: Double) -> Action {
        guard running else { return .idle }
        guard sentGeneration == generation else { return .discard }
        switch outcome {
        case .events(let page):
            expiredInARow = 0
            snapshotPause = 0
            let fresh = page.events.filter { $0.id > cursor }
            guard let last = fresh.last else { return poll() }
            handling = last.id
            return .handle(fresh, cursor: last.id)
        case .unauthorized:
            running = false
            return .endSession
        case .cursorExpired:
            running = false
            expiredInARow += 1
            snapshotPause = Self.snapshotPause(expiredInARow: expiredInARow, jitter: jitter)
            return .resnapshot
        case .failure:
            let delay = Self.retryDelay + (min(max(jitter, 0), 0.999_999) - 0.5)
            return .retry(afterSeconds: delay, after: cursor, generation: generation)
        }
    }

    /// The app handled the batch ending at `through`: only now does the cursor advance.
    public mutating func handled(through handledCursor: Int64) -> Action {
        guard running else { return .idle }
        if let handling, handledCursor == handling {
            cursor = max(cursor, handledCursor)
            self.handling = nil
        }
        return poll()
    }

    /// After a new snapshot: continue from its cursor.
    public mutating func resume(from newCursor: Int64) -> Action {
        cursor = newCursor
        handling = nil
        running = true
        return poll()
    }

    /// Stops (logout, app going away).
    public mutating func stop() {
        running = false
        handling = nil
    }

    /// None for the first expiry; then 1 s doubling to the ceiling, spread ±25 % by `jitter`.
    static func snapshotPause(expiredInARow: Int, jitter: Double) -> Double {
        guard expiredInARow > 1 else { return 0 }
        let base = min(pow(2, Double(min(expiredInARow - 2, 16))), snapshotPauseCeiling)
        return base * (0.75 + min(max(jitter, 0), 1) * 0.5)
    }

    private func poll() -> Action {
        .poll(after: cursor, wait: Self.wait, generation: generation)
    }
}
