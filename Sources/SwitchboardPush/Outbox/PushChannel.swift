import Foundation
import SwitchboardObservability
import SwitchboardPushCore

/// One way to reach a device (APNs VoIP today; APNs alert, FCM and the Android vendors' services
/// next), behind which the outbox and the dispatcher stay the same. A channel builds its
/// request from a ring, sends a job over its own transport (its own HTTP client settings and
/// auth-token clock) and reads its service's answers with its own reason table.
public protocol PushChannel: Sendable {
    /// The token kind a device registers for it (`ios-voip`, …): the key jobs are routed by,
    /// and the `channel` of metrics and the status view.
    var name: String { get }
    /// The service behind it (`apns`, `fcm`, …): the `provider` of metrics and the status view.
    var provider: String { get }
    /// What the operator is told at start-up about this channel.
    var summary: PushChannelSummary { get }
    /// The request that rings `ring`'s device; throws when the push cannot be built (the job is
    /// then stored as failed with the error as its reason).
    func ringRequest(for ring: PushRing) throws -> PushRequest
    /// The request that tells a device a ring is over; `nil` when this channel carries no
    /// notices (a VoIP push must always report a call, so notices never go that way).
    func noticeRequest(for notice: PushNotice) throws -> PushRequest?
    /// Sends one job; a channel that is not configured answers at once with
    /// ``PushChannelSummary/notConfiguredReason``.
    func send(_ job: PushJob) async -> PushSendResult
    /// The channel's reason table: what to do with an answer, and the reason recorded with it.
    func verdict(for result: PushSendResult) -> PushVerdict
    /// Closes its connections; called once, after the dispatcher has stopped.
    func shutdown() async
}

/// What a channel makes of one answer.
public struct PushVerdict: Sendable, Equatable {
    public var action: PushAction
    /// The reason recorded with the outcome.
    public var reason: String
    /// The service asked for at least this many seconds before the next attempt.
    public var retryAfter: TimeInterval?

    public init(action: PushAction, reason: String, retryAfter: TimeInterval? = nil) {
        self.action = action
        self.reason = reason
        self.retryAfter = retryAfter
    }
}

extension PushVerdict {
    /// The verdict every channel gives a transport failure (retry, with its message) and an
    /// answer (its reason table's action, its reason or `HTTP <status>`, its `Retry-After`).
    public init(_ result: PushSendResult, table: (_ status: Int, _ reason: String?) -> PushAction) {
        switch result {
        case .transportFailure(let message): self.init(action: .retry, reason: message)
        case .response(let status, let reason, let retryAfter):
            self.init(action: table(status, reason), reason: reason ?? "HTTP \(status)", retryAfter: retryAfter)
        }
    }
}

/// What carries one channel's requests to its service: an HTTP/2 client with its credentials,
/// or a test's stand-in.
public protocol PushTransport: Sendable {
    func send(_ job: PushJob) async -> PushSendResult
    /// Closes its connections; called once, after the dispatcher has stopped.
    func shutdown() async
}

extension PushTransport {
    public func shutdown() async {}
}

/// A push channel as the start-up log line shows it.
public struct PushChannelSummary: Sendable, Equatable {
    /// The reason a job of a channel without credentials fails with, at once.
    public static let notConfiguredReason = "ProviderNotConfigured"

    public let channel: String
    public let provider: String
    public let configured: Bool
    /// How the server authenticates (`token`, `certificate`), empty when not configured.
    public let auth: String
    /// Where pushes go, e.g. `production=api.push.apple.com:443 sandbox=…`.
    public let endpoints: String
    /// The CA file trusted instead of the system's, empty for the system's.
    public let caFile: String
    /// The settings that configure the channel, for the warning when it is not.
    public let hint: String
    /// A channel many deployments never use (Android's): off, it is said at info level, not
    /// as a warning.
    public let optional: Bool

    public init(
        channel: String, provider: String, configured: Bool, auth: String, endpoints: String, caFile: String,
        hint: String, optional: Bool = false
    ) {
        self.optional = optional
        self.channel = channel
        self.provider = provider
        self.configured = configured
        self.auth = auth
        self.endpoints = endpoints
        self.caFile = caFile
        self.hint = hint
    }

    /// Logs the channel: info when configured, a warning when every push will fail.
    public func log(to logger: Logger) {
        if configured {
            logger.info(
                "push channel configured",
                [
                    "channel": .string(channel), "provider": .string(provider), "auth": .string(auth),
                    "endpoints": .string(endpoints),
                    "caFile": .string(caFile.isEmpty ? "system trust" : caFile),
                ])
        } else if optional {
            logger.info(
                "push channel off: its pushes fail at once with \(Self.notConfiguredReason)",
                [
                    "channel": .string(channel), "provider": .string(provider), "hint": .string(hint),
                ])
        } else {
            logger.warning(
                "push channel not configured: every push fails at once with \(Self.notConfiguredReason)",
                [
                    "channel": .string(channel), "provider": .string(provider), "hint": .string(hint),
                ])
        }
    }
}

/// The channels of one server, by name. A job for a channel that is not here fails at once
/// (``missingChannelReason``): its device registered a token kind this server does not send.
public struct PushChannels: Sendable {
    /// The reason a job fails with when no channel of its name exists.
    public static let missingChannelReason = "ChannelNotAvailable"

    public let all: [any PushChannel]
    private let byName: [String: any PushChannel]

    public init(_ channels: [any PushChannel]) {
        all = channels
        byName = Dictionary(channels.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public subscript(name: String) -> (any PushChannel)? { byName[name] }

    /// Closes every channel's connections.
    public func shutdown() async {
        for channel in all { await channel.shutdown() }
    }
}

/// Where a job's channels come from: the server's own, or, for a push-gateway job, its app's
/// (an app may bring its own credentials; SPEC §8). The dispatcher asks per job; the
/// outbox's writers ask before they build a ring's request.
public protocol PushChannelDirectory: Sendable {
    /// The server's own channels (and every job's when no app has its own).
    var server: PushChannels { get }
    /// The channels for the jobs of `callID` (the outbox's call key: a gateway job's names its
    /// app). Throws when they cannot be known now (the job is tried again), never answers
    /// with another's channels instead.
    func channels(forCall callID: String) async throws -> PushChannels
    /// Closes every channel's connections.
    func shutdown() async
}

/// The server's channels for every job.
public struct ServerChannelDirectory: PushChannelDirectory {
    public let server: PushChannels

    public init(_ server: PushChannels) { self.server = server }

    public func channels(forCall callID: String) async -> PushChannels { server }

    public func shutdown() async { await server.shutdown() }
}
