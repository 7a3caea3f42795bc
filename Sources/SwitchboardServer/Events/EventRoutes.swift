import Foundation
import SwitchboardHTTP
import SwitchboardWire

/// `GET /events` (long poll) and `GET /events/stream` (Server-Sent Events).
struct EventRoutes {
    /// Test seams.
    struct Hooks: Sendable {
        /// Runs after the first query found nothing and before the waiter is registered: the
        /// window the second query exists to close.
        var afterFirstQuery: (@Sendable () async -> Void)?

        init(afterFirstQuery: (@Sendable () async -> Void)? = nil) {
            self.afterFirstQuery = afterFirstQuery
        }
    }

    /// The largest integer a JSON number carries exactly: 2^53 − 1.
    static let maxSafeInteger: Int64 = 9_007_199_254_740_991

    let store: ServerStore
    let authenticator: Authenticator
    let heartbeat: Duration
    let hooks: Hooks
    /// The caps on held requests per user and per client address.
    let held: HeldRequests
    /// Proxies whose `X-Forwarded-For` names the client (``ClientAddress``).
    let trustedProxies: Set<String>

    func register(in router: inout Router) {
        router.add(
            "GET", "/events",
            authenticator.require { context, principal in
                let parameters = context.request.queryParameters
                let after = try Self.cursor(parameters["after"], name: "after")
                let wait = try Self.waitSeconds(parameters["wait"])
                let hold = try held.hold(
                    user: principal.user.id, address: ClientAddress.of(context.request, trusting: trustedProxies))
                defer { hold.release() }
                let events = try await longPoll(userID: principal.user.id, after: after, wait: wait)
                return HTTPResponse(
                    status: 200, headers: ["Content-Type": "application/json"],
                    body: EventJSON.page(events, cursor: events.last?.id ?? after))
            })
        router.add(
            "GET", "/events/stream",
            authenticator.require { context, principal in
                // `after` is part of the stream's URL, which an EventSource sends again on every
                // reconnect, so it is always required and checked; `Last-Event-ID`, which the
                // EventSource adds when it reconnects, says where to resume and wins.
                let query = try Self.cursor(context.request.queryParameters["after"], name: "after")
                let after =
                    try context.request.headers["Last-Event-ID"].map { text throws(APIError) in
                        try Self.cursor(text, name: "Last-Event-ID")
                    } ?? query
                let userID = principal.user.id
                let hold = try held.hold(
                    user: userID, address: ClientAddress.of(context.request, trusting: trustedProxies))
                // Check the cursor before the stream starts, so an expired one is a plain 410.
                let first = try await store.snapshot { try EventFeed.page(for: userID, after: after, in: $0.events) }
                return HTTPResponse(
                    status: 200,
                    headers: [
                        "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                    ]
                ) { writer in
                    defer { hold.release() }
                    try await stream(
                        userID: userID, sessionID: principal.sessionID, after: after, first: first, to: writer)
                }
            })
    }

    /// The long poll of SPEC §2: answer at once when events exist; otherwise register, query
    /// once more, and only then wait for a commit to wake us.
    func longPoll(userID: String, after: Int64, wait: Int) async throws -> [Event] {
        let first = try await store.snapshot { try EventFeed.page(for: userID, after: after, in: $0.events) }
        if !first.isEmpty || wait == 0 { return first }
        if let hook = hooks.afterFirstQuery { await hook() }
        let deadline = store.environment.moment(after: .seconds(wait))
        while true {
            let left = deadline.timeIntervalSince(store.environment.now())
            guard left > 0 else { return [] }
            let token = store.hub.register(userID: userID, timeout: .milliseconds(Int64((left * 1000).rounded(.up))))
            defer { store.hub.release(token) }
            let second = try await store.snapshot { try EventFeed.page(for: userID, after: after, in: $0.events) }
            if !second.isEmpty { return second }
            switch await store.hub.wait(token) {
            case .notified(let events, let previous) where previous <= after:
                return Array(events.filter { $0.id > after }.prefix(EventFeed.pageSize))
            case .notified, .changed:
                // Another instance committed events of this user's (or its notices may have
                // been missed): register again and read; a notice about events this cursor
                // already has just means waiting on.
                continue
            case .timedOut, .cancelled:
                return []
            }
        }
    }

    /// Writes events as they come, `id:` being the event id, with a comment heartbeat when
    /// nothing happened for `heartbeat`. Ends when the client goes away, or within seconds of
    /// its session ending (logout, logout everywhere, a password change, expiry): an ended
    /// session wakes its user's streams on every instance, and the session is checked again
    /// before events are written (at most once a second) and at every heartbeat.
    func stream(
        userID: String, sessionID: String, after: Int64, first: [Event], to writer: HTTPStreamWriter
    ) async throws {
        var cursor = after
        var pending = first
        var checked = ContinuousClock.now
        let store = self.store
        func sessionEnded(force: Bool) async throws -> Bool {
            guard force || ContinuousClock.now - checked >= .seconds(1) else { return false }
            checked = ContinuousClock.now
            return try await !store.snapshot { try $0.accounts.isSessionLive(sessionID) }
        }
        try await writer.write("retry: 3000\n\n")
        while !Task.isCancelled {
            if pending.isEmpty {
                let token = store.hub.register(userID: userID, timeout: heartbeat)
                let current = cursor
                pending = try await store.snapshot { try EventFeed.page(for: userID, after: current, in: $0.events) }
                if pending.isEmpty {
                    let reason = await store.hub.wait(token)
                    store.hub.release(token)
                    switch reason {
                    case .notified(let events, let previous) where previous <= cursor:
                        pending = events.filter { $0.id > cursor }
                        if pending.isEmpty { continue }
                    case .notified, .changed:
                        // Committed by another instance (the next turn reads it), or a session
                        // of this user ended somewhere.
                        if try await sessionEnded(force: true) { return }
                        continue
                    case .cancelled: return
                    case .timedOut:
                        if store.hub.isClosed { return }  // shutting down: end the stream cleanly
                        if try await sessionEnded(force: true) { return }
                        try await writer.write(": heartbeat\n\n")
                        continue
                    }
                } else {
                    store.hub.release(token)
                }
            }
            if try await sessionEnded(force: false) { return }
            var frame = ""
            for event in pending {
                frame += "id: \(event.id)\ndata: \(EventJSON.event(event))\n\n"
                cursor = event.id
            }
            pending = []
            try await writer.write(frame)
            let current = cursor
            pending = try await store.snapshot { try EventFeed.page(for: userID, after: current, in: $0.events) }
        }
    }

    /// A non-negative safe integer (0 … 2^53 − 1), digits only.
    static func cursor(_ text: String?, name: String) throws(APIError) -> Int64 {
        guard let text else { throw APIError.validation("query parameter '\(name)' is required", field: name) }
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int64(text), value <= maxSafeInteger
        else {
            throw APIError.validation("'\(name)' must be an integer from 0 to 9007199254740991", field: name)
        }
        return value
    }

    /// 0–25 seconds, default 20.
    static func waitSeconds(_ text: String?) throws(APIError) -> Int {
        guard let text else { return 20 }
        guard !text.isEmpty, text.utf8.count <= 2, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int(text), value <= 25
        else {
            throw APIError.validation("'wait' must be an integer from 0 to 25", field: "wait")
        }
        return value
    }
}
