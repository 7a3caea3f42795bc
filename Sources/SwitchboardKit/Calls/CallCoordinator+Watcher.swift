import Foundation
import SwitchboardWire

// Following the server while calls are live.
extension CallCoordinator {
    /// While any call is live, the coordinator follows the event stream itself, so a call
    /// answered elsewhere or hung up is noticed even when the app's own feed is not running
    /// (a backgrounded app kept alive by its call).
    /// Starts following events unless a watcher already runs; true when it started one.
    @discardableResult
    func startWatcher() -> Bool {
        state.withLock { state in
            guard state.watcher == nil, !state.closed else { return false }
            state.watcher = Task { [self] in await self.watch() }
            return true
        }
    }

    /// It ends only when no call is live, on `shutdown()`, or when the server refuses the
    /// current token (the app is told; `use(backend:)` starts it again).
    func watch() async {
        var cursor: Int64?
        var failures = 0
        var expired = 0
        while !Task.isCancelled {
            let (live, backend, generation) = state.withLock { state -> ([String], any CallBackend, Int) in
                // Gateway calls have no Switchboard events: their app server is asked instead.
                let live = state.ledger.liveCallIDs.filter { state.gatewayCalls[$0] == nil }
                if live.isEmpty { state.watcher = nil }
                return (live, state.backend, state.generation)
            }
            if live.isEmpty { return }
            let reconnects = reconnect?.reconnectCount ?? 0, sent = reconnect?.moment ?? 0
            do {
                if let after = cursor {
                    let page = try await backend.callEvents(after: after, wait: EventConsumerPolicy.wait)
                    cursor = page.cursor
                    expired = 0
                    await handle(events: page.events)
                } else {
                    cursor = try await backend.eventCursor()
                    // Re-read what happened before the cursor was taken.
                    for callID in live { await request(callID, .fetch) }
                }
                failures = 0
                reconnect?.requestSucceeded(sentAt: sent)
            } catch let error as SwitchboardAPIError where error.status == 401 {
                // Sent with a token replaced meanwhile: go on at once with the new one.
                if tokenRefused(generation, stopWatching: true) { return }
            } catch let error as SwitchboardAPIError where error.status == 410 {
                // The server no longer keeps events that far back: start from a new cursor and
                // re-read the live calls, as when the watcher starts; expired again right after
                // that, it waits first (back-off), as the event feed does.
                cursor = nil
                expired += 1
                let pause = EventConsumerPolicy.snapshotPause(expiredInARow: expired, jitter: Double.random(in: 0..<1))
                if pause > 0 { try? await clock.sleep(for: .milliseconds(Int(pause * 1000))) }
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let pause = Double(min(failures, 3))
                if let reconnect {
                    if let status = (error as? SwitchboardAPIError)?.status, status != 0 {
                        reconnect.requestSucceeded(sentAt: sent)
                    } else {
                        reconnect.requestFailed()
                    }
                    // Cut short the moment the network is back (rule 12).
                    try? await reconnect.pause(pause, since: reconnects) { [clock] in
                        try await clock.sleep(for: .milliseconds(Int($0 * 1000)))
                    }
                } else {
                    try? await clock.sleep(for: .seconds(pause))
                }
            }
        }
    }
}
