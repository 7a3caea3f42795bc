import Foundation
import SwitchboardKit

/// Event kinds after which the contacts screen is read again.
private enum SocialEvents {
    static let kinds: Set<EventKind> = [
        .friendRequest, .friendAccepted, .friendRemoved, .blockChanged, .groupMembersChanged, .groupChanged,
    ]
}

// The session's event feed (SPEC §4 rule 10: the SDK's `EventFeed`) and the coordinator's notices.
extension AppModel {
    /// Follows the session's events from its saved cursor (or `startCursor`): calls go to the
    /// coordinator, social changes re-read the contacts. Replaces a feed already running.
    ///
    /// The feed follows the reconnect plans (SDK guide, "Field policies"): a retry pause ends the
    /// moment the network is back, and after a long outage or an expired cursor it takes a new
    /// cursor and runs `refresh` (contacts, calls, meetings) before it goes on.
    func follow(_ session: SignedInSession, startCursor: Int64) {
        session.feedTask?.cancel()
        let meetings = session.policies.meetings
        let feed = EventFeed(
            client: session.client, cursorStore: session.cursorStore, startCursor: startCursor,
            reconnect: session.policies.reconnect,
            refresh: { [weak self] in
                await self?.refreshContacts()
                await self?.catchUpCalls()
                await meetings.refresh()
            })
        feedStatus = .following
        session.feedTask = Task {
            let end = await Self.consume(
                feed, coordinator: session.coordinator, session: session, model: self)
            guard !Task.isCancelled, self.session === session else { return }
            if end == .sessionEnded {
                await sessionExpired()
            } else {
                feedStatus = .offline
            }
        }
    }

    /// Runs the feed until it ends (401, an expired cursor) or is cancelled; the cursor
    /// advances only after each batch was handled, which is when the loop asks for the next.
    nonisolated private static func consume(
        _ feed: EventFeed, coordinator: CallCoordinator, session: SignedInSession, model: AppModel
    ) async -> EventFeedUpdate? {
        let directory = session.callDirectory, meetings = session.policies.meetings
        do {
            for try await update in feed {
                switch update {
                case .events(let events):
                    // A call seen here takes the push's path (SPEC §4 rule 3).
                    await coordinator.handle(events: events)
                    await model.refreshCallRows()
                    if events.contains(where: { SocialEvents.kinds.contains($0.kind) }) {
                        await model.refreshContacts()
                    }
                    // Beside the feed: a slow list read never holds up the next batch (refreshes queue).
                    if CallDirectorySync.needsRefresh(events) { Task { await refresh(directory) } }
                    if MeetingPreloader.needsRefresh(events) { Task { await meetings.refresh() } }
                case .sessionEnded, .snapshotRequired:
                    return update
                }
            }
        } catch {
            // Cancelled: the session ended or its feed was replaced.
        }
        return nil
    }

    /// Hands the coordinator's notices, from any thread, to the model on the main actor.
    nonisolated static func relay(_ notices: AsyncStream<CallCoordinator.Notice>, to model: AppModel) async {
        for await notice in notices {
            await model.noticed(notice)
        }
    }
}
