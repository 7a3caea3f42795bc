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
    func follow(_ session: SignedInSession, startCursor: Int64) {
        session.feedTask?.cancel()
        let feed = EventFeed(client: session.client, cursorStore: session.cursorStore, startCursor: startCursor)
        feedStatus = .following
        session.feedTask = Task {
            let end = await Self.consume(
                feed, coordinator: session.coordinator, directory: session.callDirectory, model: self)
            guard !Task.isCancelled, self.session === session else { return }
            switch end {
            case .sessionEnded?:
                await sessionExpired()
            case .snapshotRequired?:
                await resnapshot(session)
            default:
                feedStatus = .offline
            }
        }
    }

    /// Runs the feed until it ends (401, an expired cursor) or is cancelled; the cursor
    /// advances only after each batch was handled, which is when the loop asks for the next.
    nonisolated private static func consume(
        _ feed: EventFeed, coordinator: CallCoordinator, directory: CallDirectorySync?, model: AppModel
    ) async -> EventFeedUpdate? {
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
                case .sessionEnded, .snapshotRequired:
                    return update
                }
            }
        } catch {
            // Cancelled: the session ended or its feed was replaced.
        }
        return nil
    }

    /// The cursor is older than the server keeps: a new snapshot (cursor, contacts, calls),
    /// then a new feed after it. Retried every few seconds while the server cannot answer.
    private func resnapshot(_ session: SignedInSession) async {
        feedStatus = .offline
        while self.session === session, !Task.isCancelled {
            do {
                let me = try await session.client.me()
                await session.cursorStore.save(me.eventCursor)
                await refreshContacts()
                await catchUpCalls()
                // Last: this runs in the ended feed's task, which `follow` cancels.
                follow(session, startCursor: me.eventCursor)
                return
            } catch let error as SwitchboardAPIError where error.status == 401 {
                await sessionExpired()
                return
            } catch {
                try? await Task.sleep(nanoseconds: 3_000_000_000)
            }
        }
    }

    /// Hands the coordinator's notices, from any thread, to the model on the main actor.
    nonisolated static func relay(_ notices: AsyncStream<CallCoordinator.Notice>, to model: AppModel) async {
        for await notice in notices {
            await model.noticed(notice)
        }
    }
}
