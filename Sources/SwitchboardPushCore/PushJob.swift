import Foundation

/// One push as a channel sends it: claimed from the outbox, with the request its channel built
/// when the ring was written.
public struct PushJob: Sendable {
    /// The job id, a lowercase UUID; APNs's `apns-id`, the same on every retry.
    public let id: String
    public let callID: String
    public let userID: String
    /// The channel that sends it (``PushChannel/name``), as the device registered the token.
    public let channel: String
    /// What it is: a ring, or a notice after a ring ended (which needs no ringing call).
    public let kind: PushJobKind
    public let token: String
    /// `sandbox` or `production` for APNs; empty where a channel has no environments.
    public let environment: String
    public let payload: [UInt8]
    public let headers: [(String, String)]
    /// Attempts already made.
    public let attempts: Int
    /// The end of the ring window: no attempt after it.
    public let expiresAt: Date

    public init(
        id: String, callID: String, userID: String, channel: String, kind: PushJobKind = .ring, token: String,
        environment: String,
        payload: [UInt8], headers: [(String, String)], attempts: Int, expiresAt: Date
    ) {
        self.id = id
        self.callID = callID
        self.userID = userID
        self.channel = channel
        self.kind = kind
        self.token = token
        self.environment = environment
        self.payload = payload
        self.headers = headers
        self.attempts = attempts
        self.expiresAt = expiresAt
    }
}

/// What a push job carries.
public enum PushJobKind: String, Sendable, CaseIterable {
    /// Rings the device (or, for a person whose preferences or the caller's ring list say
    /// notify, tells it quietly: the ring's quiet form); dropped before an attempt once the call
    /// stopped ringing its user, and told how the ring ended.
    case ring
    /// Tells a device that was rung that the ring is over (SPEC §3 "Notices").
    case notice
}

/// A ring that ended for one device that did not end it itself, before any channel's format.
public struct PushNotice: Sendable, Equatable {
    public var callID: String
    public var scopeKind: String
    public var scopeID: String
    public var callerName: String
    /// `answered_elsewhere`, `declined_elsewhere`, `cancelled` or `missed`; ``notRung`` for a
    /// call that does not ring this device.
    public var reason: String
    public var jobID: String
    /// After this the notice is pointless (the phone's own ring is long over).
    public var expiresAt: Date
    public var now: Date
    /// The device's locale (BCP 47) as it registered it: the language of any text shown.
    public var locale: String?
    /// For a ``notRung`` notice: the call's mode and its group's name.
    public var mode: String?
    public var groupName: String?

    /// The reason of a notice that tells of a call instead of ringing (the person's do not
    /// disturb, or the caller's ring list): a quiet `call_incoming`, never a ring.
    public static let notRung = "not_rung"

    /// The `type` of its data object: `call_incoming` for ``notRung``, else `call_ended`.
    public var dataType: String { reason == Self.notRung ? "call_incoming" : "call_ended" }

    public init(
        callID: String, scopeKind: String, scopeID: String, callerName: String, reason: String, jobID: String,
        expiresAt: Date, now: Date, locale: String? = nil, mode: String? = nil, groupName: String? = nil
    ) {
        self.locale = locale
        self.mode = mode
        self.groupName = groupName
        self.callID = callID
        self.scopeKind = scopeKind
        self.scopeID = scopeID
        self.callerName = callerName
        self.reason = reason
        self.jobID = jobID
        self.expiresAt = expiresAt
        self.now = now
    }
}

/// What a channel's service answered.
public enum PushSendResult: Sendable, Equatable {
    /// The service answered with a status, (for errors) a reason, and maybe how long to wait
    /// before the next attempt (`Retry-After`, seconds).
    case response(status: Int, reason: String?, retryAfter: TimeInterval? = nil)
    /// No answer: connection failure, timeout, protocol error (retried).
    case transportFailure(String)
}

/// How a job ended (`push_jobs.state` besides `pending`).
public enum PushJobOutcome: String, Sendable, CaseIterable {
    case delivered, dropped, expired, failed
}

/// The queue at a glance: how many jobs wait, how many are due, and when the next falls due
/// (a claimed job counts from the end of its lease).
public struct PushQueueOutlook: Sendable, Equatable {
    public var pending: Int
    public var due: Int
    public var nextDueMS: Int64?

    public init(pending: Int, due: Int, nextDueMS: Int64?) {
        self.pending = pending
        self.due = due
        self.nextDueMS = nextDueMS
    }
}

/// One ringing invitation on one device, before any channel's format: what a channel's
/// payload builder turns into its request.
public struct PushRing: Sendable, Equatable {
    public var callID: String
    public var scopeKind: String
    public var scopeID: String
    public var mode: String
    public var callerName: String
    public var groupName: String?
    /// The job id: the request's id where the channel has one (APNs's `apns-id`).
    public var jobID: String
    /// The end of the ring window: the service must not deliver the push later.
    public var expiresAt: Date
    public var now: Date
    /// The device's payload key: a VoIP push then carries its payload encrypted (SPEC §3).
    public var payloadKey: PayloadKey?
    /// A gateway app's own data for its app on the phone (`ext.data`): the payload's `ext`.
    public var appData: [String: String]?
    /// A gateway app's APNs collapse id (`ext.apns.collapseId`), instead of `call_<callId>`.
    public var apnsCollapseID: String?
    /// The device's locale (BCP 47) as it registered it: the language of any text shown.
    public var locale: String?

    public init(
        callID: String, scopeKind: String, scopeID: String, mode: String, callerName: String, groupName: String?,
        jobID: String,
        expiresAt: Date, now: Date, payloadKey: PayloadKey? = nil, appData: [String: String]? = nil,
        apnsCollapseID: String? = nil, locale: String? = nil
    ) {
        self.locale = locale
        self.appData = appData
        self.apnsCollapseID = apnsCollapseID
        self.callID = callID
        self.scopeKind = scopeKind
        self.scopeID = scopeID
        self.mode = mode
        self.callerName = callerName
        self.groupName = groupName
        self.jobID = jobID
        self.expiresAt = expiresAt
        self.now = now
        self.payloadKey = payloadKey
    }
}

/// A device's VoIP payload key (256 bits) and the id its pushes name it by.
public struct PayloadKey: Sendable, Equatable, CustomStringConvertible {
    public let id: String
    public let bytes: [UInt8]

    public init(id: String, bytes: [UInt8]) {
        self.id = id
        self.bytes = bytes
    }

    /// The id only: the key never reaches a log.
    public var description: String { "PayloadKey(\(id))" }
}

/// A channel's request for one job, built when the ring is written and stored with the job.
public struct PushRequest: Sendable {
    public var payload: [UInt8]
    public var headers: [(String, String)]

    public init(payload: [UInt8], headers: [(String, String)]) {
        self.payload = payload
        self.headers = headers
    }
}
