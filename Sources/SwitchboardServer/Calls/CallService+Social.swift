import SwitchboardCore
import SwitchboardPush
import SwitchboardStore
import SwitchboardWire

/// How social changes end or leave calls: the call's transition commits in the same
/// transaction as the social change, and so do its media withdrawals, as outbox jobs
/// (``MediaWithdrawals``) that the outbox runner carries out right after the commit and retries
/// until the media backend confirms them. A block while LiveKit is down still takes the blocked user out of the room,
/// once LiveKit is back; and nothing is withdrawn for a change that did not commit.
extension CallService {
    /// Inside the social change's transaction: ends the scope's live call with `reason`.
    /// Returns how many notices it wrote (then wake the dispatcher after the commit).
    @discardableResult
    static func endLiveCall(
        scopeKind: ScopeKind, scopeID: String, reason: CallInfo.EndReason, channels: PushChannels, withdrawMedia: Bool,
        in transaction: WriteTransaction
    ) throws -> Int {
        try applyToLiveCall(
            scopeKind: scopeKind, scopeID: scopeID, channels: channels, withdrawMedia: withdrawMedia, in: transaction
        ) { call in
            CallStateMachine.scopeEnded(call, reason: reason, now: transaction.date)
        }
    }

    /// Inside the social change's transaction: takes `userID` out of the group's live call.
    @discardableResult
    static func removeFromLiveCall(
        groupID: String, userID: String, channels: PushChannels, withdrawMedia: Bool, in transaction: WriteTransaction
    ) throws -> Int {
        try applyToLiveCall(
            scopeKind: .group, scopeID: groupID, channels: channels, withdrawMedia: withdrawMedia, in: transaction
        ) { call in
            CallStateMachine.memberRemoved(call, userID: userID, now: transaction.date)
        }
    }

    /// `withdrawMedia`: whether the media backend manages rooms (the withdrawals are written as
    /// jobs only then).
    private static func applyToLiveCall(
        scopeKind: ScopeKind, scopeID: String, channels: PushChannels, withdrawMedia: Bool,
        in transaction: WriteTransaction,
        _ decide: (CallRecord) -> CallStateMachine.Transition?
    ) throws -> Int {
        let calls = transaction.calls
        guard let id = try calls.liveCallID(scopeKind: scopeKind, scopeID: scopeID),
            let stored = try calls.load(id), let transition = decide(stored.call)
        else { return 0 }
        // Same transaction as the read: the version cannot have moved.
        _ = try calls.update(transition.call, from: stored.version)
        try transaction.appendEvent(.callChanged, to: transition.effects.notify, callID: id)
        try chronicle(from: stored.call, to: transition.call, in: transaction)
        if withdrawMedia {
            for action in transition.effects.media {
                try transaction.enqueue(MediaWithdrawals.job(action, callID: id, id: transaction.newID()))
            }
        }
        return try PushOutbox.enqueueNotices(
            from: stored.call, to: transition.call, actingSession: nil, channels: channels, in: transaction)
    }
}
