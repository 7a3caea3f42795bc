import SwitchboardCore
import SwitchboardPush
import SwitchboardStore
import SwitchboardWire

/// How social changes end or leave calls: the media permission is withdrawn first (best
/// effort, so that a block or an unfriending never fails because the media server is down),
/// then the call's transition commits in the same transaction as the social change.
extension CallService {
    /// Before a change that ends the scope's live call (or removes `member` from it): close the
    /// room, or remove that member from it. Failures are logged; the watchdog and LiveKit's own
    /// timeouts are the fallback.
    func withdrawMedia(scopeKind: CallScopeKind, scopeID: String, member: String? = nil) async {
        guard media.managesRooms else { return }
        do {
            let call = try await store.snapshot { snapshot -> CallRecord? in
                guard let id = try snapshot.calls.liveCallID(scopeKind: scopeKind, scopeID: scopeID) else { return nil }
                return try snapshot.calls.load(id)?.call
            }
            guard let call, call.answeredAt != nil else { return }
            if let member {
                guard call.presentUserIDs.contains(member) else { return }
                let lastOne = call.presentUserIDs == [member]
                try await media.perform(lastOne ? [.deleteRoom(call.roomName)] : [.removeParticipant(room: call.roomName, identity: member)])
            } else {
                try await media.perform([.deleteRoom(call.roomName)])
            }
        } catch {
            logger.warning("could not withdraw media before a social change", [
                "scope.id": .string(scopeID), "error": .string(String(describing: error)),
            ])
        }
    }

    /// Inside the social change's transaction: ends the scope's live call with `reason`.
    /// Returns how many notices it wrote (then wake the dispatcher after the commit).
    @discardableResult
    static func endLiveCall(
        scopeKind: CallScopeKind, scopeID: String, reason: SwitchboardCore.CallEndReason, channels: PushChannels, in transaction: WriteTransaction
    ) throws -> Int {
        try applyToLiveCall(scopeKind: scopeKind, scopeID: scopeID, channels: channels, in: transaction) { call in
            CallStateMachine.scopeEnded(call, reason: reason, now: transaction.date)
        }
    }

    /// Inside the social change's transaction: takes `userID` out of the group's live call.
    @discardableResult
    static func removeFromLiveCall(groupID: String, userID: String, channels: PushChannels, in transaction: WriteTransaction) throws -> Int {
        try applyToLiveCall(scopeKind: .group, scopeID: groupID, channels: channels, in: transaction) { call in
            CallStateMachine.memberRemoved(call, userID: userID, now: transaction.date)
        }
    }

    private static func applyToLiveCall(
        scopeKind: CallScopeKind, scopeID: String, channels: PushChannels, in transaction: WriteTransaction,
        _ decide: (CallRecord) -> CallStateMachine.Transition?
    ) throws -> Int {
        let calls = transaction.calls
        guard let id = try calls.liveCallID(scopeKind: scopeKind, scopeID: scopeID),
            let stored = try calls.load(id), let transition = decide(stored.call)
        else { return 0 }
        // Same transaction as the read: the version cannot have moved.
        _ = try calls.update(transition.call, from: stored.version)
        try transaction.appendEvent(EventKind.callChanged, to: transition.effects.notify, callID: id)
        return try PushOutbox.enqueueNotices(from: stored.call, to: transition.call, actingSession: nil, channels: channels, in: transaction)
    }
}
