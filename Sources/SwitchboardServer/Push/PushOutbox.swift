import Foundation
import SwitchboardCore
import SwitchboardPush
import SwitchboardStore

/// Writes push jobs inside the transaction that starts a ring: one per (ringing invitee,
/// device bound to a live session), on the channel ``PushRouting`` picks for the device, with
/// the request that channel builds. A job that cannot be built (payload too large, no such
/// channel here) is stored as failed, so nothing is silent.
enum PushOutbox {
    /// Returns how many jobs it wrote (pending or failed): with none, nobody needs to wake the
    /// dispatcher.
    @discardableResult
    static func enqueueRings(for transition: CallStateMachine.Transition, channels: PushChannels, in transaction: WriteTransaction) throws -> Int {
        let call = transition.call
        guard !transition.effects.ring.isEmpty else { return 0 }
        var written = 0
        let callerName = try transaction.accounts.user(id: call.createdBy)?.displayName ?? ""
        var groupName: String?
        if call.scopeKind == .group {
            groupName = try transaction.groups.name(of: call.scopeID)
        }
        let now = CallStore.milliseconds(transaction.date)
        let configured = Set(channels.all.filter(\.summary.configured).map(\.name))
        for userID in transition.effects.ring {
            for device in try transaction.devices.devices(of: userID) {
                guard let channelName = PushRouting.ringChannel(platform: device.platform, tokens: Set(device.tokens.keys), configured: configured),
                    let target = device.tokens[channelName]
                else { continue }
                let jobID = transaction.newID()
                var state = "pending", reason: String?
                var request = PushRequest(payload: [], headers: [])
                if let channel = channels[channelName] {
                    do {
                        request = try channel.ringRequest(for: PushRing(
                            callID: call.id, scopeKind: call.scopeKind.rawValue, scopeID: call.scopeID, mode: call.mode.rawValue,
                            callerName: callerName, groupName: groupName, jobID: jobID, expiresAt: call.ringDeadline, now: transaction.date))
                    } catch {
                        state = "failed"
                        reason = "\(error)"
                    }
                } else {
                    // A token kind this server has no channel for: recorded, never silent.
                    state = "failed"
                    reason = PushChannels.missingChannelReason
                }
                let headerJSON = (try? JSONSerialization.data(withJSONObject: request.headers.map { [$0.0, $0.1] }))
                    .map { String(decoding: $0, as: UTF8.self) } ?? "[]"
                try transaction.pushJobs.enqueue(NewPushJob(
                    id: jobID, callID: call.id, userID: userID, deviceID: device.deviceID,
                    provider: channels[channelName]?.provider ?? PushRouting.provider(of: channelName), channel: channelName,
                    token: target.token, environment: target.environment, payload: String(decoding: request.payload, as: UTF8.self),
                    headers: headerJSON, state: state, reason: reason, createdAtMS: now, expiresAtMS: CallStore.milliseconds(call.ringDeadline)))
                written += 1
            }
        }
        return written
    }
}
