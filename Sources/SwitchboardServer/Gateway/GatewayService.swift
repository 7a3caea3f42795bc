import Foundation
import SwitchboardCore
import SwitchboardPush
import SwitchboardWire
import SwitchboardPushCore

/// What an app server does through the gateway (SPEC §8): its users' devices, and call signals
/// that ring every callee device through the outbox (VoIP push, FCM or a maker's channel), with
/// the abuse limits of the one limiter (``ServerLimits``): the 6th ring to a device within 60 s
/// (calls and signals alike) is refused and cuts it off for 10 minutes; the 4th signal to a
/// callee within 10 minutes is dropped silently.
struct GatewayService: Sendable {
    let store: ServerStore
    /// The server's channels, or an app's own (its push settings).
    let directory: any PushChannelDirectory
    let ringTimeout: TimeInterval
    let pushesQueued: @Sendable () -> Void
    /// Keeps the devices' VoIP payload keys encrypted (off without `dataEncryptionKey`).
    var payloadKeys = PayloadKeyVault(secret: nil)

    /// The reason a ring to a device the limit cut off is recorded with.
    static let cutOffReason = PushOutbox.cutOffReason

    struct Caller: Codable, Sendable {
        let id: String
        let name: String
    }

    struct Signal: Decodable, Sendable {
        let callId: String
        let roomId: String
        let type: String
        let caller: Caller
        let callees: [String]
        let timestamp: Int64?
    }

    struct Device: Decodable, Sendable {
        let userId: String
        let deviceId: String
        let platform: DevicePlatform
        let brand: String?
        let tokens: [String: PushTokenRegistration]
    }

    struct DeviceView: Encodable {
        let userId: String
        let deviceId: String
        let platform: String
        let channels: [String]
        /// The id of the key its VoIP pushes are encrypted with; absent: plain pushes.
        let payloadKeyId: String?
    }

    struct DeviceStatus: Encodable {
        let userId: String
        let deviceId: String
        let channel: String
        let state: String
        @NullWhenAbsent var reason: String?
    }

    struct CalleeStatus: Encodable {
        let userId: String
        /// `rung`, `rate_limited` (dropped silently by the callee limit) or `no_devices`.
        let outcome: String
    }

    struct SignalStatus: Encodable {
        let callId: String
        /// `ringing` or `cancelled` (past its window a ringing signal's pushes expire by themselves).
        let state: String
        let expiresAt: String
        let callees: [CalleeStatus]
        let devices: [DeviceStatus]
    }

    // MARK: Devices

    func register(_ request: Device, app: String) async throws -> DeviceView {
        let user = try Self.userID(request.userId, field: "userId")
        let valid = try DeviceRoutes.validate(
            RegisterPushDevice(
                deviceId: request.deviceId, platform: request.platform, brand: request.brand, tokens: request.tokens))
        var tokens: [String: PushTarget] = [:]
        for token in valid.tokens {
            tokens[token.channel] = PushTarget(
                deviceID: valid.deviceID, token: token.token, environment: token.environment,
                payloadKey: try token.payloadKey.map {
                    try payloadKeys.seal($0, owner: PayloadKeyVault.owner(app: app, device: valid.deviceID))
                })
        }
        let device = GatewayDevice(
            deviceID: valid.deviceID, platform: valid.platform, brand: valid.brand, tokens: tokens)
        try await store.write { transaction in
            try transaction.gatewaySignals.register(
                app: app, user: user, device: device, at: CallStore.milliseconds(transaction.date))
        }
        return DeviceView(
            userId: user, deviceId: valid.deviceID, platform: valid.platform, channels: tokens.keys.sorted(),
            payloadKeyId: tokens[DeviceRoutes.voipPlatform]?.payloadKey?.id)
    }

    func removeDevice(app: String, user: String, deviceID: String) async throws {
        let removed = try await store.write {
            try $0.gatewaySignals.removeDevice(app: app, user: user, deviceID: deviceID.lowercased())
        }
        guard removed else { throw APIError.notFound("no device '\(deviceID)' of user '\(user)'") }
    }

    // MARK: Signals

    /// Rings every callee's devices, unless a limit holds them back; a callId sent again
    /// answers the first signal's status (app servers retry).
    /// `body`: the request's bytes, for its `ext` object (kept with the signal as sent).
    func send(_ request: Signal, body: [UInt8], app: String) async throws -> (SignalStatus, isNew: Bool) {
        let callID = try Self.userID(request.callId, field: "callId")
        let roomID = try Self.userID(request.roomId, field: "roomId")
        guard ["audio", "video"].contains(request.type) else {
            throw APIError.validation("'type' must be 'audio' or 'video'", field: "type")
        }
        let callerID = try Self.userID(request.caller.id, field: "caller.id")
        guard (1...100).contains(request.caller.name.unicodeScalars.count) else {
            throw APIError.validation("'caller.name' must be 1 to 100 characters", field: "caller.name")
        }
        guard (1...50).contains(request.callees.count) else {
            throw APIError.validation("'callees' must list 1 to 50 user ids", field: "callees")
        }
        var listed: [String] = []
        for (index, callee) in request.callees.enumerated() {
            let id = try Self.userID(callee, field: "callees[\(index)]")
            if !listed.contains(id) { listed.append(id) }
        }
        let callees = listed
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let extValue = object?["ext"] ?? [String: Any]()
        guard extValue is [String: Any],
            let extData = try? JSONSerialization.data(withJSONObject: extValue, options: [.sortedKeys]),
            extData.count <= 4096
        else { throw APIError.validation("'ext' must be an object of at most 4 KiB of JSON", field: "ext") }
        let ext = String(decoding: extData, as: UTF8.self)
        let hints = try Self.hints(in: extValue as? [String: Any] ?? [:])
        let channels = try await directory.channels(forCall: GatewayNamespace.callKey(app: app, call: callID))
        let ringTimeout = self.ringTimeout, payloadKeys = self.payloadKeys
        let (written, isNew) = try await store.write { transaction -> (Int, Bool) in
            let signals = transaction.gatewaySignals
            if try signals.signal(app: app, call: callID) != nil { return (0, false) }
            let now = CallStore.milliseconds(transaction.date)
            let expires = transaction.date.addingTimeInterval(ringTimeout)
            try signals.insert(
                GatewaySignal(
                    appID: app, callID: callID, roomID: roomID, type: request.type, callerID: callerID,
                    callerName: request.caller.name, ext: ext,
                    state: "ringing", createdAtMS: now, expiresAtMS: CallStore.milliseconds(expires)))
            let configured = Set(channels.all.filter(\.summary.configured).map(\.name))
            var written = 0
            for callee in callees {
                let devices = try signals.devices(app: app, user: callee)
                // The callee limit: past 3 signals that rang them in ten minutes, further ones
                // are dropped, silently.
                if !devices.isEmpty,
                    try !transaction.rateCounters.take(
                        1,
                        [
                            (
                                ServerLimits.gatewayCalleeKey(app: app, user: callee),
                                transaction.limits.gatewaySignalsPerCallee
                            )
                        ], at: now
                    ).isAllowed
                {
                    try signals.recordCallee(app: app, call: callID, user: callee, outcome: "rate_limited", at: now)
                    continue
                }
                // The callee's own say (PUT /gateway/v1/users/{id}/push-preferences), as for accounts.
                let decision = try PushOutbox.ringPolicy(
                    of: GatewayNamespace.userKey(app: app, user: callee), in: transaction
                ).decision(forCaller: callerID, at: transaction.date)
                if !devices.isEmpty, decision != .ring {
                    try signals.recordCallee(
                        app: app, call: callID, user: callee, outcome: decision == .off ? "do_not_disturb" : "notified",
                        at: now)
                    if decision == .notify {
                        written += try notices(
                            to: devices, of: callee, app: app, call: callID, reason: PushNotice.notRung,
                            callerName: request.caller.name, roomID: roomID, mode: request.type, channels: channels,
                            configured: configured, expires: expires, in: transaction)
                    }
                    continue
                }
                try signals.recordCallee(
                    app: app, call: callID, user: callee, outcome: devices.isEmpty ? "no_devices" : "rung", at: now)
                for device in devices {
                    guard
                        let channelName = PushRouting.ringChannel(
                            platform: device.platform, brand: device.brand, tokens: Set(device.tokens.keys),
                            configured: configured),
                        let target = device.tokens[channelName]
                    else { continue }
                    let jobID = transaction.newID()
                    // The device limit: the 6th ring in 60 s is refused and cuts the device
                    // off for 10 minutes; its rings meanwhile are counted (a job dropped at
                    // once), not sent.
                    let cutOff = try !PushOutbox.admitRing(toDevice: device.deviceID, in: transaction)
                    if cutOff {
                        try PushOutbox.enqueue(
                            PushRequest(payload: [], headers: []), id: jobID, kind: .ring,
                            call: GatewayNamespace.callKey(app: app, call: callID),
                            user: GatewayNamespace.userKey(app: app, user: callee), device: device.deviceID,
                            target: target, channel: channelName,
                            provider: channels[channelName]?.provider ?? PushRouting.provider(of: channelName),
                            failure: Self.cutOffReason,
                            dropped: true, at: now, expires: expires, in: transaction)
                        continue
                    }
                    let (pushRequest, failure) = PushOutbox.ringRequest(
                        PushRing(
                            callID: callID, scopeKind: "gateway", scopeID: roomID, mode: request.type,
                            callerName: request.caller.name,
                            groupName: nil, jobID: jobID, expiresAt: expires, now: transaction.date,
                            appData: hints.data,
                            apnsCollapseID: hints.apnsCollapseID),
                        to: target, owner: PayloadKeyVault.owner(app: app, device: device.deviceID), on: channelName,
                        channels: channels,
                        keys: payloadKeys)
                    try PushOutbox.enqueue(
                        pushRequest, id: jobID, kind: .ring, call: GatewayNamespace.callKey(app: app, call: callID),
                        user: GatewayNamespace.userKey(app: app, user: callee), device: device.deviceID, target: target,
                        channel: channelName,
                        provider: channels[channelName]?.provider ?? PushRouting.provider(of: channelName),
                        failure: failure, at: now,
                        expires: expires, in: transaction)
                    written += 1
                }
            }
            // A signal nothing went out for (no devices, do not disturb) finished at once.
            try Self.noteIfFinished(app: app, call: callID, in: transaction)
            return (written, true)
        }
        if written > 0 { pushesQueued() }
        return (try await status(app: app, call: callID), isNew)
    }

    /// Cancels a signal: what is still pending is dropped before its next attempt, and every
    /// Android device whose ring went out gets a `call_ended` notice (iPhones: an `ios-alert`
    /// background notice where they have one; a VoIP token never).
    func cancel(app: String, call callID: String) async throws -> SignalStatus {
        let channels = try await directory.channels(forCall: GatewayNamespace.callKey(app: app, call: callID))
        let written = try await store.write { transaction -> Int in
            let signals = transaction.gatewaySignals
            guard let signal = try signals.signal(app: app, call: callID) else {
                throw APIError.notFound("no signal '\(callID)'")
            }
            guard signal.state == "ringing" else { return 0 }
            try signals.cancel(app: app, call: callID)
            let now = CallStore.milliseconds(transaction.date)
            // What waits is dropped now (a claimed one, in flight, by its sender's check).
            let dropped = try transaction.pushJobs.dropPendingRings(
                ofCall: GatewayNamespace.callKey(app: app, call: callID), at: now)
            // The rings that waited are dropped: unless one is in flight, the signal finished
            // now (one that had finished before said so then).
            if dropped > 0 { try Self.noteIfFinished(app: app, call: callID, in: transaction) }
            guard now < signal.expiresAtMS else { return 0 }
            let configured = Set(channels.all.filter(\.summary.configured).map(\.name))
            let expires = transaction.date.addingTimeInterval(PushOutbox.noticeLifetime)
            var written = 0
            for (callee, outcome) in try signals.callees(app: app, call: callID)
            where outcome == "rung" || outcome == "notified" {
                let key = GatewayNamespace.userKey(app: app, user: callee)
                let rung = try transaction.pushJobs.rungDevices(
                    callID: GatewayNamespace.callKey(app: app, call: callID), userID: key)
                written += try notices(
                    to: try signals.devices(app: app, user: callee).filter { rung.contains($0.deviceID) }, of: callee,
                    app: app, call: callID, reason: "cancelled", callerName: signal.callerName, roomID: signal.roomID,
                    mode: nil, channels: channels, configured: configured, expires: expires, in: transaction)
            }
            return written
        }
        if written > 0 { pushesQueued() }
        return try await status(app: app, call: callID)
    }

    func status(app: String, call callID: String) async throws -> SignalStatus {
        guard let status = try await store.snapshot({ try Self.status(app: app, call: callID, in: $0) }) else {
            throw APIError.notFound("no signal '\(callID)'")
        }
        return status
    }

    /// A signal's status as one transaction or snapshot sees it; nil when there is no such signal.
    static func status(app: String, call callID: String, in repositories: any Repositories) throws -> SignalStatus? {
        guard let signal = try repositories.gatewaySignals.signal(app: app, call: callID) else { return nil }
        let callees = try repositories.gatewaySignals.callees(app: app, call: callID)
        let jobs = try repositories.pushJobs.rings(ofCall: GatewayNamespace.callKey(app: app, call: callID))
        return SignalStatus(
            callId: callID, state: signal.state, expiresAt: Timestamp.iso8601(CallStore.date(signal.expiresAtMS)),
            callees: callees.map { CalleeStatus(userId: $0.user, outcome: $0.outcome) },
            devices: jobs.map { job in
                DeviceStatus(
                    userId: GatewayNamespace.split(job.userID)?.id ?? "", deviceId: job.deviceID, channel: job.channel,
                    state: job.state,
                    reason: job.reason)
            })
    }

    /// The `data` of `gateway.signal.finished`.
    struct SignalFinished: Encodable {
        let appId: String
        let signal: SignalStatus
    }

    /// Inside a transaction: when no ring of the signal is pending any more, tells the webhook
    /// endpoints that it finished.
    static func noteIfFinished(app: String, call callID: String, in transaction: WriteTransaction) throws {
        // The signal's status is read only when an endpoint will hear of it.
        let endpoints = try transaction.webhookEndpoints.all()
        guard endpoints.contains(where: { $0.wants(WebhookEventType.gatewaySignalFinished.rawValue) }),
            let status = try status(app: app, call: callID, in: transaction),
            !status.devices.contains(where: { $0.state == "pending" })
        else { return }
        try WebhookOutbox.emit(
            .gatewaySignalFinished, SignalFinished(appId: app, signal: status),
            order: GatewayNamespace.callKey(app: app, call: callID), to: endpoints, in: transaction)
    }

    /// An app's id for a user, call or room: 1 to 128 printable ASCII characters, no `/`.
    /// What a signal's `ext` asks of its pushes: `data`, strings for the app on the phone (the
    /// ring payload's `ext`, inside the encrypted envelope where the device has a key), and
    /// `apns.collapseId` (1 to 64 bytes), the VoIP push's collapse id instead of `call_<callId>`.
    /// Other members are kept with the signal and not sent.
    static func hints(in ext: [String: Any]) throws(APIError) -> (data: [String: String]?, apnsCollapseID: String?) {
        var data: [String: String]?
        if let value = ext["data"] {
            guard let object = value as? [String: Any], object.count <= 32,
                let strings = object as? [String: String], strings.keys.allSatisfy(Self.isHintText)
            else {
                throw APIError.validation(
                    "'ext.data' must be an object of at most 32 strings, named with 1 to 64 printable ASCII characters",
                    field: "ext.data")
            }
            // Carried in every ring: within this, it fits FCM's 4 KiB of data and, encrypted,
            // APNs's 5 KiB of VoIP payload beside the ring's own fields.
            let size =
                (try? JSONSerialization.data(withJSONObject: strings, options: [.sortedKeys, .withoutEscapingSlashes])
                    .count) ?? .max
            guard size <= Self.maxAppDataBytes else {
                throw APIError.validation(
                    "'ext.data' must be at most \(Self.maxAppDataBytes) bytes of JSON (it has \(size))",
                    field: "ext.data")
            }
            data = strings
        }
        var collapseID: String?
        if let value = ext["apns"] {
            guard let apns = value as? [String: Any] else {
                throw APIError.validation("'ext.apns' must be an object", field: "ext.apns")
            }
            if let id = apns["collapseId"] {
                guard let text = id as? String, Self.isHintText(text) else {
                    throw APIError.validation(
                        "'ext.apns.collapseId' must be 1 to 64 printable ASCII characters", field: "ext.apns.collapseId"
                    )
                }
                collapseID = text
            }
        }
        return (data, collapseID)
    }

    /// The most `ext.data` a signal may carry, as JSON.
    static let maxAppDataBytes = 2048

    /// 1 to 64 printable ASCII characters (space to `~`).
    private static func isHintText(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { (32...126).contains($0) }
    }

    /// Writes a notice about a signal to each of an app user's `devices` that can take one:
    /// `cancelled` to those it rang, or a quiet `call_incoming` (``PushNotice/notRung``) to
    /// those their push preferences keep from ringing. Returns how many it wrote.
    private func notices(
        to devices: [GatewayDevice], of callee: String, app: String, call callID: String, reason: String,
        callerName: String, roomID: String, mode: String?, channels: PushChannels, configured: Set<String>,
        expires: Date, in transaction: WriteTransaction
    ) throws -> Int {
        var written = 0
        for device in devices {
            guard
                let route = PushOutbox.noticeRoute(
                    platform: device.platform, brand: device.brand, tokens: device.tokens, channels: channels,
                    configured: configured)
            else { continue }
            // A quiet notice is the device's ring in its quiet form (see PushOutbox.enqueueRings).
            let wrote = try PushOutbox.enqueueNotice(
                kind: reason == PushNotice.notRung ? .ring : .notice,
                call: GatewayNamespace.callKey(app: app, call: callID),
                user: GatewayNamespace.userKey(app: app, user: callee), device: device.deviceID, route: route,
                expires: expires, in: transaction
            ) { jobID in
                PushNotice(
                    callID: callID, scopeKind: "gateway", scopeID: roomID, callerName: callerName, reason: reason,
                    jobID: jobID, expiresAt: expires, now: transaction.date, mode: mode)
            }
            if wrote { written += 1 }
        }
        return written
    }

    /// An app user's push preferences (the defaults until the app sets any).
    func preferences(app: String, user: String) async throws -> PushPreferences {
        let user = try Self.userID(user, field: "userId")
        return try await store.snapshot {
            try $0.pushPreferences.preferences(of: GatewayNamespace.userKey(app: app, user: user))
        } ?? .defaults
    }

    /// Sets an app user's push preferences, checked as an account's are; answers them as stored.
    func setPreferences(_ requested: PushPreferences, app: String, user: String) async throws -> PushPreferences {
        let user = try Self.userID(user, field: "userId")
        let preferences = try PushPreferenceRoutes.checked(requested)
        try await store.write { transaction in
            try transaction.pushPreferences.set(
                preferences, of: GatewayNamespace.userKey(app: app, user: user), at: transaction.timestamp)
        }
        return preferences
    }

    static func userID(_ text: String, field: String) throws(APIError) -> String {
        guard (1...128).contains(text.utf8.count), text.utf8.allSatisfy({ (33...126).contains($0) && $0 != 47 }) else {
            throw APIError.validation(
                "'\(field)' must be 1 to 128 printable ASCII characters without spaces or '/'", field: field)
        }
        return text
    }
}
