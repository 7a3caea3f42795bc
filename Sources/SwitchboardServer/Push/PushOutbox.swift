import Foundation
import SwitchboardCore
import SwitchboardPush
import SwitchboardStore
import SwitchboardPushCore

/// Writes push jobs inside the transaction that starts a ring: one per (ringing invitee,
/// device bound to a live session), on the channel ``PushRouting`` picks for the device, with
/// the request that channel builds. A job that cannot be built (payload too large, no such
/// channel here) is stored as failed, so nothing is silent.
enum PushOutbox {
    /// Returns how many jobs it wrote (pending or failed): with none, nobody needs to wake the
    /// dispatcher.
    ///
    /// Whether an invitee's phones ring is theirs and the caller's to say: `ringOnly` (the
    /// caller's ring list; nil: everyone) and the invitee's ``PushPreferences`` give a
    /// ``RingDecision`` each, and the quieter one holds. `notify` writes a quiet notice per
    /// device instead of a ring (``enqueueQuietNotices``), `off` nothing; the invitation
    /// itself rings all the same (events, answer, the ring timeout).
    @discardableResult
    static func enqueueRings(
        for transition: CallStateMachine.Transition, ringOnly: Set<String>? = nil, channels: PushChannels,
        keys: PayloadKeyVault,
        in transaction: WriteTransaction
    ) throws -> Int {
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
            // Most invitees have no device: nothing more is read for them.
            let devices = try transaction.devices.devices(of: userID)
            guard !devices.isEmpty else { continue }
            let asked: RingDecision = ringOnly.map { $0.contains(userID) ? .ring : .notify } ?? .ring
            let decision = min(
                asked,
                try ringPolicy(of: userID, in: transaction).decision(forCaller: call.createdBy, at: transaction.date))
            switch decision {
            case .off: continue
            case .notify:
                // Each device's ring in its quiet form: a ring job, so it goes only while the call
                // still rings, a cancel drops it while it waits, and the ending is told like any
                // ring's (replacing it on OPPO and vivo).
                for device in devices {
                    guard
                        let route = noticeRoute(
                            platform: device.platform, brand: device.brand, tokens: device.tokens,
                            channels: channels, configured: configured)
                    else { continue }
                    try enqueueNotice(
                        kind: .ring, call: call.id, user: userID, device: device.deviceID, route: route,
                        expires: call.ringDeadline, in: transaction
                    ) { jobID in
                        PushNotice(
                            callID: call.id, scopeKind: call.scopeKind.rawValue, scopeID: call.scopeID,
                            callerName: callerName, reason: PushNotice.notRung, jobID: jobID,
                            expiresAt: call.ringDeadline, now: transaction.date, locale: device.locale,
                            mode: call.mode.rawValue, groupName: groupName)
                    }
                    written += 1
                }
                continue
            case .ring: break
            }
            for device in devices {
                guard
                    let channelName = PushRouting.ringChannel(
                        platform: device.platform, brand: device.brand, tokens: Set(device.tokens.keys),
                        configured: configured),
                    let target = device.tokens[channelName]
                else { continue }
                let jobID = transaction.newID()
                guard try admitRing(toDevice: device.deviceID, in: transaction) else {
                    try enqueue(
                        PushRequest(payload: [], headers: []), id: jobID, kind: .ring, call: call.id, user: userID,
                        device: device.deviceID,
                        target: target, channel: channelName,
                        provider: channels[channelName]?.provider ?? PushRouting.provider(of: channelName),
                        failure: cutOffReason, dropped: true, at: now, expires: call.ringDeadline, in: transaction)
                    continue
                }
                let (request, reason) = ringRequest(
                    PushRing(
                        callID: call.id, scopeKind: call.scopeKind.rawValue, scopeID: call.scopeID,
                        mode: call.mode.rawValue,
                        callerName: callerName, groupName: groupName, jobID: jobID, expiresAt: call.ringDeadline,
                        now: transaction.date, locale: device.locale),
                    to: target, owner: PayloadKeyVault.owner(device: device.deviceID), on: channelName,
                    channels: channels, keys: keys)
                try enqueue(
                    request, id: jobID, kind: .ring, call: call.id, user: userID, device: device.deviceID,
                    target: target,
                    channel: channelName,
                    provider: channels[channelName]?.provider ?? PushRouting.provider(of: channelName),
                    failure: reason, at: now, expires: call.ringDeadline, in: transaction)
                written += 1
            }
        }
        return written
    }

    /// Where a notice to a device goes: the channel ``PushRouting`` picks for notices among its
    /// tokens and this server's channels, with its token there; nil when it can take none.
    static func noticeRoute(
        platform: String, brand: String?, tokens: [String: PushTarget], channels: PushChannels,
        configured: Set<String>
    ) -> (name: String, target: PushTarget, channel: any PushChannel)? {
        guard
            let name = PushRouting.noticeChannel(
                platform: platform, brand: brand, tokens: Set(tokens.keys), configured: configured),
            let target = tokens[name], let channel = channels[name]
        else { return nil }
        return (name, target, channel)
    }

    /// The user's ``RingPolicy``: every call rings for someone who never said otherwise, or
    /// whose stored preferences no longer check (a time zone the system stopped knowing).
    static func ringPolicy(of userID: String, in repositories: any Repositories) throws -> RingPolicy {
        guard let preferences = try repositories.pushPreferences.preferences(of: userID) else { return .ringAlways }
        return (try? RingPolicy(preferences)) ?? .ringAlways
    }

    /// Builds the notice `make` gives for one device (with its job id) on that device's notice
    /// `route` and stores it as a job of `kind`; a request that cannot be built is stored failed
    /// with the error, so nothing is silent. Returns whether it wrote a job (a channel that
    /// carries no notices writes none).
    @discardableResult
    static func enqueueNotice(
        kind: PushJobKind, call: String, user: String, device: String,
        route: (name: String, target: PushTarget, channel: any PushChannel), expires: Date,
        in transaction: WriteTransaction, _ make: (_ jobID: String) -> PushNotice
    ) throws -> Bool {
        let jobID = transaction.newID()
        var failure: String?
        let request: PushRequest?
        do {
            request = try route.channel.noticeRequest(for: make(jobID))
        } catch {
            request = PushRequest(payload: [], headers: [])
            failure = "\(error)"
        }
        guard let request else { return false }
        try enqueue(
            request, id: jobID, kind: kind, call: call, user: user, device: device, target: route.target,
            channel: route.name, provider: route.channel.provider, failure: failure,
            at: CallStore.milliseconds(transaction.date), expires: expires, in: transaction)
        return true
    }

    /// The reason a ring to a device the ring limit cut off is recorded with (dropped, never sent).
    static let cutOffReason = "device_cut_off"

    /// Whether one more ring may go to `deviceID` now: the device ring limit
    /// (``ServerLimits/ringsPerDevice``, shared by calls and the gateway) takes one ring, and a
    /// refusal cuts the device off for the breaker's time (its rings meanwhile are refused too).
    static func admitRing(toDevice deviceID: String, in transaction: WriteTransaction) throws -> Bool {
        try transaction.rateCounters.take(
            1, [(ServerLimits.deviceRingKey(deviceID), transaction.limits.ringsPerDevice)],
            at: CallStore.milliseconds(transaction.date)
        ).isAllowed
    }

    /// The request `channelName`'s channel builds for `ring` to `target`, or why it has none: no
    /// such channel here (a token kind this server does not send), a payload that cannot be
    /// built, or the device's payload key unreadable here (never sent in the clear instead).
    static func ringRequest(
        _ ring: PushRing, to target: PushTarget, owner: String, on channelName: String, channels: PushChannels,
        keys: PayloadKeyVault
    ) -> (PushRequest, failure: String?) {
        let none = PushRequest(payload: [], headers: [])
        guard let channel = channels[channelName] else { return (none, PushChannels.missingChannelReason) }
        var ring = ring
        if let stored = target.payloadKey {
            guard let key = keys.open(stored, owner: owner) else { return (none, PayloadKeyVault.unreadableReason) }
            ring.payloadKey = key
        }
        do {
            return (try channel.ringRequest(for: ring), nil)
        } catch {
            return (none, "\(error)")
        }
    }

    /// How long a notice is worth sending: past it the phone's own ring is long over. A missed
    /// call is still news to a phone that was offline: a day.
    static let noticeLifetime: TimeInterval = 60
    static let missedCallNoticeLifetime: TimeInterval = 24 * 3600

    /// Writes notices inside the transaction of a transition (SPEC §3 "Notices"): for every ring
    /// it ended, one job per device of that user the ring may have reached (its ring job went
    /// out or is going out) that can take a notice (an `ios-alert` token, an Android channel),
    /// except the devices of `actingSession` when the user answered or declined there. A device
    /// that never rang is not told (FCM deprioritises high-priority messages nobody sees), and a
    /// VoIP token never gets one. Returns how many it wrote.
    @discardableResult
    static func enqueueNotices(
        from before: CallRecord, to after: CallRecord, actingSession: String?, channels: PushChannels,
        in transaction: WriteTransaction
    ) throws -> Int {
        let ended = EndedRing.between(before, after)
        guard !ended.isEmpty else { return 0 }
        let configured = Set(channels.all.filter(\.summary.configured).map(\.name))
        var written = 0
        var caller: String?  // read once, and only when a notice is written
        for ring in ended {
            // Most users have no device to tell: no job lookup for them.
            let devices = try transaction.devices.devices(of: ring.userID)
            guard !devices.isEmpty else { continue }
            let rung = try transaction.pushJobs.rungDevices(callID: after.id, userID: ring.userID)
            guard !rung.isEmpty else { continue }
            let expires = transaction.date.addingTimeInterval(
                ring.outcome == .missed ? missedCallNoticeLifetime : noticeLifetime)
            for device in devices {
                guard rung.contains(device.deviceID) else { continue }
                if ring.byTheUser, let actingSession, device.sessionID == actingSession { continue }
                guard
                    let route = noticeRoute(
                        platform: device.platform, brand: device.brand, tokens: device.tokens, channels: channels,
                        configured: configured)
                else { continue }
                if caller == nil { caller = try transaction.accounts.user(id: after.createdBy)?.displayName ?? "" }
                let callerName = caller ?? ""
                let wrote = try enqueueNotice(
                    kind: .notice, call: after.id, user: ring.userID, device: device.deviceID, route: route,
                    expires: expires, in: transaction
                ) { jobID in
                    PushNotice(
                        callID: after.id, scopeKind: after.scopeKind.rawValue, scopeID: after.scopeID,
                        callerName: callerName, reason: ring.noticeReason, jobID: jobID, expiresAt: expires,
                        now: transaction.date, locale: device.locale)
                }
                if wrote { written += 1 }
            }
        }
        return written
    }

    /// Stores one job: pending, or failed with `failure` when its request could not be built,
    /// or (`dropped`) ended at once with that reason, never sent (a device the gateway cut off).
    static func enqueue(
        _ request: PushRequest, id: String, kind: PushJobKind, call: String, user: String, device: String,
        target: PushTarget,
        channel: String, provider: String, failure: String?, dropped: Bool = false, at now: Int64, expires: Date,
        in transaction: WriteTransaction
    ) throws {
        let headers =
            (try? JSONSerialization.data(withJSONObject: request.headers.map { [$0.0, $0.1] }))
            .map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        try transaction.pushJobs.enqueue(
            NewPushJob(
                id: id, callID: call, userID: user, deviceID: device, provider: provider, channel: channel,
                kind: kind.rawValue,
                token: target.token, environment: target.environment,
                payload: String(decoding: request.payload, as: UTF8.self),
                headers: headers, state: dropped ? "dropped" : failure == nil ? "pending" : "failed", reason: failure,
                createdAtMS: now,
                expiresAtMS: CallStore.milliseconds(expires)))
    }
}
