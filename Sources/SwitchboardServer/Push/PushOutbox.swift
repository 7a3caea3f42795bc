import Foundation
import SwitchboardCore
import SwitchboardPush
import SwitchboardStore

/// Writes push jobs inside the transaction that starts a ring: one per (ringing invitee,
/// device bound to a live session, channel the device registered a token for), each with the
/// request its channel builds. A job that cannot be built (payload too large) is stored as
/// failed, so nothing is silent.
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
        for userID in transition.effects.ring {
            for channel in channels.all {
                for device in try transaction.devices.targets(of: userID, platform: channel.name) {
                    let jobID = transaction.newID()
                    var state = "pending", reason: String?
                    var request = PushRequest(payload: [], headers: [])
                    do {
                        request = try channel.ringRequest(for: PushRing(
                            callID: call.id, scopeKind: call.scopeKind.rawValue, scopeID: call.scopeID, mode: call.mode.rawValue,
                            callerName: callerName, groupName: groupName, jobID: jobID, expiresAt: call.ringDeadline, now: transaction.date))
                    } catch {
                        state = "failed"
                        reason = "\(error)"
                    }
                    let headerJSON = (try? JSONSerialization.data(withJSONObject: request.headers.map { [$0.0, $0.1] }))
                        .map { String(decoding: $0, as: UTF8.self) } ?? "[]"
                    try transaction.pushJobs.enqueue(NewPushJob(
                        id: jobID, callID: call.id, userID: userID, deviceID: device.deviceID, provider: channel.provider,
                        channel: channel.name, token: device.token, environment: device.environment,
                        payload: String(decoding: request.payload, as: UTF8.self), headers: headerJSON, state: state,
                        reason: reason, createdAtMS: now, expiresAtMS: CallStore.milliseconds(call.ringDeadline)))
                    written += 1
                }
            }
        }
        return written
    }
}
