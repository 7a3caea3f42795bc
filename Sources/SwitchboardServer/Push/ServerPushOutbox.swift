import Foundation
import SwitchboardPush
import SwitchboardPushCore
import SwitchboardWire

/// The dispatcher's outbox (``PushOutboxStore``) on the server's store: the push job, call and
/// device repositories, in SQLite or PostgreSQL.
struct ServerPushOutbox: PushOutboxStore {
    let store: ServerStore

    var instanceID: String { store.instanceID }
    var isShared: Bool { store.backend.isShared }
    func now() -> Date { store.environment.now() }
    func sleep(until moment: Date) async throws { try await store.environment.sleepUntil(moment) }

    func releaseClaims() async throws {
        _ = try await store.write { try $0.pushJobs.releaseClaims() }
    }

    func outlook(at nowMS: Int64) async throws -> PushQueueOutlook {
        try await store.snapshot { try $0.pushJobs.outlook(at: nowMS) }
    }

    func claim(dueAt nowMS: Int64, limit: Int, leaseMS: Int64, skipping: Set<String>) async throws -> [PushJob] {
        let instance = store.instanceID
        return try await store.write { transaction in
            let claimedAt = max(nowMS, CallStore.milliseconds(transaction.date))
            return try transaction.pushJobs.claim(
                dueAt: nowMS, limit: limit, leaseUntilMS: claimedAt + leaseMS, by: instance, skipping: skipping)
        }
    }

    func relevance(of job: PushJob) async throws -> PushJobRelevance {
        let now = CallStore.milliseconds(store.environment.now())
        return try await store.snapshot { snapshot in
            // A gateway job: its app's signal still rings (not cancelled, its window open), its
            // device is still the app's.
            if let call = GatewayNamespace.split(job.callID), let user = GatewayNamespace.split(job.userID) {
                if job.kind == .ring {
                    guard let signal = try snapshot.gatewaySignals.signal(app: call.app, call: call.id),
                        signal.state == "ringing",
                        now < signal.expiresAtMS
                    else { return .callNotRinging }
                }
                guard
                    try snapshot.gatewaySignals.isLive(
                        app: user.app, user: user.id, token: job.token, channel: job.channel)
                else { return .deviceUnbound }
                if Self.carriesPayloadKeys(job) {
                    let current = try snapshot.gatewaySignals.payloadKeyID(
                        app: user.app, user: user.id, token: job.token, channel: job.channel)
                    guard current == Self.payloadKeyID(of: job) else { return .payloadKeyChanged }
                }
                return .send
            }
            // A notice is about a ring that ended: only its device must still be there.
            if job.kind == .ring, !(try snapshot.calls.rings(job.callID, userID: job.userID)) { return .callNotRinging }
            guard try snapshot.devices.isLive(token: job.token, channel: job.channel, of: job.userID) else {
                return .deviceUnbound
            }
            if Self.carriesPayloadKeys(job) {
                let current = try snapshot.devices.payloadKeyID(token: job.token, channel: job.channel, of: job.userID)
                guard current == Self.payloadKeyID(of: job) else { return .payloadKeyChanged }
            }
            return .send
        }
    }

    /// VoIP rings are what a payload key encrypts.
    static func carriesPayloadKeys(_ job: PushJob) -> Bool {
        job.kind == .ring && job.channel == APNsVoIPChannel.channelName
    }

    /// The key id an encrypted payload was sealed for; nil for a plain one.
    static func payloadKeyID(of job: PushJob) -> String? {
        guard job.payload.count > 2,
            let object = (try? JSONSerialization.jsonObject(with: Data(job.payload))) as? [String: Any],
            object["enc"] != nil
        else { return nil }
        return object["kid"] as? String ?? ""
    }

    func reschedule(_ job: PushJob, nextAttemptAtMS: Int64, reason: String, attempted: Bool) async throws {
        let instance = store.instanceID
        _ = try await store.write {
            try $0.pushJobs.reschedule(
                job.id, nextAttemptAtMS: nextAttemptAtMS, reason: reason, attempted: attempted, by: instance)
        }
    }

    func finish(
        _ job: PushJob, _ outcome: PushJobOutcome, reason: String?, lastError: String?, attempted: Bool,
        at nowMS: Int64,
        token: PushTokenVerdict?
    ) async throws -> Bool {
        let instance = store.instanceID
        return try await store.write { transaction in
            let recorded = try transaction.pushJobs.finish(
                job.id, outcome, reason: reason, lastError: lastError, attempted: attempted, at: nowMS, by: instance)
            guard recorded else { return false }
            // What the service said of the token, for the devices view: a delivery, or a
            // failure (one that failed, or expired after errors) with its reason.
            if GatewayNamespace.split(job.userID) == nil, outcome != .dropped {
                let failure: String? =
                    switch outcome {
                    case .delivered: nil
                    case .failed: reason ?? lastError ?? "failed"
                    default: lastError
                    }
                if outcome == .delivered || failure != nil {
                    try transaction.devices.noteOutcome(
                        token: job.token, channel: job.channel, of: job.userID, failure: failure,
                        at: transaction.timestamp)
                }
            }
            // The webhook endpoints hear of a push that failed for good, and of a gateway
            // signal whose last ring reached its outcome.
            if let call = GatewayNamespace.split(job.callID) {
                if job.kind == .ring {
                    try GatewayService.noteIfFinished(app: call.app, call: call.id, in: transaction)
                }
            } else if outcome == .failed,
                case let endpoints = try transaction.webhookEndpoints.all(),
                endpoints.contains(where: { $0.wants(WebhookEventType.pushFailed.rawValue) })
            {
                // The device's id is read only when an endpoint will hear of it.
                let device = try transaction.devices.health(of: job.userID).first {
                    $0.token == job.token && $0.channel == job.channel
                }
                try WebhookOutbox.emit(
                    .pushFailed,
                    PushFailedData(
                        userId: job.userID, deviceId: device?.deviceID ?? "", channel: job.channel,
                        tokenSuffix: String(job.token.suffix(8)), callId: job.callID,
                        reason: reason ?? lastError ?? "failed", removed: token == .forget),
                    order: nil, to: endpoints, in: transaction)
            }
            switch token {
            // The verdict is about the token of the job's own namespace: the server's devices, or
            // one app's.
            case .forget?:
                if let user = GatewayNamespace.split(job.userID) {
                    try transaction.gatewaySignals.forget(app: user.app, token: job.token, channel: job.channel)
                } else {
                    try transaction.devices.forget(token: job.token, channel: job.channel)
                }
            case .doubt?:
                if let user = GatewayNamespace.split(job.userID) {
                    try transaction.gatewaySignals.doubt(app: user.app, token: job.token, channel: job.channel)
                } else {
                    try transaction.devices.doubt(token: job.token, channel: job.channel)
                }
            case nil: break
            }
            return true
        }
    }
}
