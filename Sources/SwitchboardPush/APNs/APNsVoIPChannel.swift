import SwitchboardWire
import SwitchboardPushCore

/// The `ios-voip` channel: PushKit VoIP pushes through APNs (SPEC §3). Its payload builder is
/// ``VoIPPush``, its reason table ``APNsResponsePolicy``, and its transport an
/// ``APNsProvider`` (HTTP/2 with the shared provider-token clock); without credentials every
/// job fails at once with ``PushChannelSummary/notConfiguredReason``.
public struct APNsVoIPChannel: PushChannel {
    /// The token kind of PushKit VoIP tokens.
    public static let channelName = "ios-voip"

    /// The app's bundle id; VoIP pushes go to `<bundleID>.voip`.
    public let bundleID: String
    public let summary: PushChannelSummary
    let transport: (any PushTransport)?

    public var name: String { Self.channelName }
    public var provider: String { "apns" }

    /// A configured channel: `transport` sends its requests (an ``APNsTransport`` or a test's).
    public init(
        bundleID: String, transport: any PushTransport, auth: String = "", endpoints: String = "", caFile: String = ""
    ) {
        self.bundleID = bundleID
        self.transport = transport
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "apns", configured: true, auth: auth, endpoints: endpoints,
            caFile: caFile, hint: "")
    }

    /// A channel without credentials: rings are still written (and fail at once, with a reason).
    public init(unconfiguredFor bundleID: String) {
        self.bundleID = bundleID
        transport = nil
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "apns", configured: false, auth: "", endpoints: "", caFile: "",
            hint:
                "set apnsKeyFile, apnsTeamID and apnsKeyID (token auth) or apnsCertificateFile and apnsCertificateKeyFile"
        )
    }

    public func ringRequest(for ring: PushRing) throws -> PushRequest {
        let payload = VoIPPayload(
            callId: ring.callID, scopeKind: ScopeKind(rawValue: ring.scopeKind), scopeId: ring.scopeID,
            mode: CallMode(rawValue: ring.mode),
            callerName: ring.callerName, groupName: ring.groupName, ext: ring.appData)
        let push = try VoIPPush.build(
            payload, bundleID: bundleID, apnsID: ring.jobID, expiresAt: ring.expiresAt, now: ring.now,
            collapseID: ring.apnsCollapseID)
        guard let key = ring.payloadKey else { return PushRequest(payload: push.payload, headers: push.headers) }
        // The device registered a payload key: only the encrypted form leaves the server.
        return PushRequest(payload: try EncryptedVoIPPayload.seal(push.payload, key: key), headers: push.headers)
    }

    /// Never: a VoIP push must report a call to CallKit, so notices go to `ios-alert` tokens.
    public func noticeRequest(for notice: PushNotice) throws -> PushRequest? { nil }

    public func send(_ job: PushJob) async -> PushSendResult {
        guard let transport else { return .response(status: 0, reason: PushChannelSummary.notConfiguredReason) }
        return await transport.send(job)
    }

    public func verdict(for result: PushSendResult) -> PushVerdict {
        PushVerdict(result) { APNsResponsePolicy.action(status: $0, reason: $1.map(APNsReason.init)) }
    }

    public func shutdown() async { await transport?.shutdown() }
}

/// An ``APNsProvider`` as a channel's transport.
public struct APNsTransport: PushTransport {
    public let apns: APNsProvider

    public init(apns: APNsProvider) { self.apns = apns }

    /// Never: a VoIP push must report a call to CallKit, so notices go to `ios-alert` tokens.
    public func noticeRequest(for notice: PushNotice) throws -> PushRequest? { nil }

    public func send(_ job: PushJob) async -> PushSendResult {
        switch await apns.send(
            deviceToken: job.token, environment: job.environment, headers: job.headers, payload: job.payload)
        {
        case .response(let status, let reason, _): .response(status: status, reason: reason)
        case .transportFailure(let message): .transportFailure(message)
        }
    }

    public func shutdown() async { await apns.shutdown() }
}
