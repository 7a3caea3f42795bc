import Foundation
import SwitchboardCore
import SwitchboardLifecycle
import SwitchboardObservability

/// The hourly upkeep: what ages out of the store (events, unread E2EE items, Call Directory
/// changes, push tokens not registered again, finished outbox jobs, spent pre-authorisations).
extension Application {
    /// How long finished outbox jobs (delivered or dead-lettered webhooks) are kept: 7 days.
    static let outboxRetentionMS: Int64 = 7 * 86_400_000

    /// Deletes events older than the retention window now, then hourly (on the store's clock).
    func pruneEventsPeriodically() async {
        await BackgroundLoop.$name.withValue("event pruning") {
            while !Task.isCancelled {
                do {
                    let deleted = try await pruneEvents()
                    if deleted > 0 {
                        logger.info(
                            "pruned events",
                            ["deleted": .int(deleted), "retentionDays": .int(configuration.events.retentionDays)])
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("event pruning failed", ["error": .string(String(describing: error))])
                }
                try? await store.environment.sleep(for: .seconds(3600))
            }
        }
    }

    /// Deletes events older than the retention window, after the rest of the upkeep; returns
    /// how many events. A failed step is logged and does not hold up the others.
    func pruneEvents() async throws -> Int {
        let window = TimeInterval(configuration.events.retentionDays) * 86_400
        // E2EE items nobody fetched within the same window go too (their cursors then get 410).
        try await upkeepStep("pruned unread E2EE items", failure: "E2EE item pruning failed") {
            try await e2ee.prune(olderThan: window)
        }
        // Call Directory changes older than 30 days: a phone further behind reads the whole list.
        try await upkeepStep("pruned Call Directory changes", failure: "Call Directory change pruning failed") {
            try await callDirectory.prune()
        }
        // Push tokens their apps stopped registering (uninstalled, or unused for months).
        try await upkeepStep(
            "removed push tokens not registered again", failure: "push token sweep failed",
            also: ("maxAgeDays", .int(configuration.push.tokenMaxAgeDays))
        ) { try await sweepStalePushTokens() }
        // Outbox jobs done or given up a week ago (webhook deliveries stay visible that long).
        try await upkeepStep("pruned finished outbox jobs", failure: "outbox pruning failed") {
            try await store.write { transaction in
                try transaction.outboxJobs.prune(
                    finishedBefore: CallStore.milliseconds(transaction.date) - Self.outboxRetentionMS)
            }
        }
        // Expired call pre-authorisations (unused or used): they can no longer be redeemed.
        try await upkeepStep("pruned expired call pre-authorisations", failure: "call pre-authorisation pruning failed")
        {
            try await scheduledCalls.prune()
        }
        return try await store.write { transaction in
            try transaction.events.prune(before: Timestamp.iso8601(transaction.date.addingTimeInterval(-window)))
        }
    }

    /// Runs one step of the upkeep: logs `done` with how many it deleted (when any, and `also`),
    /// or `failure` with the error; only cancellation goes on up.
    private func upkeepStep(
        _ done: String, failure: String, also: (String, LogValue)? = nil, _ work: () async throws -> Int
    ) async throws {
        do {
            let deleted = try await work()
            guard deleted > 0 else { return }
            if let (key, value) = also {
                logger.info(done, ["deleted": .int(deleted), key: value])
            } else {
                logger.info(done, ["deleted": .int(deleted)])
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.error(failure, ["error": .string(String(describing: error))])
        }
    }

    /// Removes the push tokens their apps have not registered again within `pushTokenMaxAgeDays`
    /// (on the store's clock); returns how many.
    func sweepStalePushTokens() async throws -> Int {
        let maxAge = TimeInterval(configuration.push.tokenMaxAgeDays) * 86_400
        return try await store.write { transaction in
            try transaction.devices.removeStale(
                registeredBefore: Timestamp.iso8601(transaction.date.addingTimeInterval(-maxAge)))
        }
    }
}
