import Foundation
import SwitchboardPushCore

/// The `ios-alert` channel: ordinary APNs pushes to the app's own topic, for notices only (SPEC
/// §3). A missed call is an alert ("Missed call from …", in the device's language); the other endings are background
/// notices (`content-available`, priority 5) the app uses to tidy up. It shares the VoIP
/// channel's transport (one APNs client, one provider-token clock) and reason table.
public struct APNsAlertChannel: PushChannel {
    public static let channelName = "ios-alert"

    public let bundleID: String
    public let summary: PushChannelSummary
    private let transport: (any PushTransport)?
    /// Whether alerts also carry `title-loc-key`, `loc-key` and `loc-args`
    /// (``missedCallTitleKey``, ``missedCallBodyKey``), so the app's own strings word them.
    /// iOS then shows the key itself where the app has no such string: on only for apps that do.
    public let localizationKeys: Bool

    /// The key of a missed call's title in the app's `Localizable.strings`.
    public static let missedCallTitleKey = "SWITCHBOARD_MISSED_CALL"
    /// The key of a missed call's body; one `%@`, the caller.
    public static let missedCallBodyKey = "SWITCHBOARD_MISSED_CALL_FROM"

    public var name: String { Self.channelName }
    public var provider: String { "apns" }

    /// The channel over `voip`'s transport and credentials (configured or not, as it is).
    public init(sharingWith voip: APNsVoIPChannel, localizationKeys: Bool = false) {
        self.localizationKeys = localizationKeys
        bundleID = voip.bundleID
        transport = voip.transport
        summary = PushChannelSummary(
            channel: Self.channelName, provider: "apns", configured: voip.summary.configured,
            auth: voip.summary.configured
                ? voip.summary.auth.replacingOccurrences(
                    of: "topic \(voip.bundleID).voip", with: "topic \(voip.bundleID)") : "",
            endpoints: voip.summary.endpoints, caFile: voip.summary.caFile, hint: voip.summary.hint)
    }

    /// Never: an alert token does not ring (a ring must reach CallKit through PushKit), and
    /// ``PushRouting`` never routes one here.
    public func ringRequest(for ring: PushRing) throws -> PushRequest {
        throw NotARingChannel(channel: Self.channelName)
    }

    public func noticeRequest(for notice: PushNotice) throws -> PushRequest? {
        guard notice.expiresAt > notice.now else { throw VoIPPush.Problem.expired }
        let missed = notice.reason == "missed", quiet = notice.reason == PushNotice.notRung
        var object: [String: Any] = [
            "type": missed ? "call_missed" : notice.dataType, "callId": notice.callID, "reason": notice.reason,
            "scopeKind": notice.scopeKind, "scopeId": notice.scopeID,
        ]
        if quiet {
            // A call that does not ring this iPhone: shown in the notification list, without a
            // sound or lighting the screen (passive), never reported to CallKit.
            let text = PushText.forLocale(notice.locale)
            let caller = notice.callerName.isEmpty ? text.unknownCaller : notice.callerName
            let video = notice.mode == "video"
            let body =
                notice.groupName == nil
                ? (video ? text.incomingVideoCall : text.incomingAudioCall)
                : PushText.format(video ? text.incomingVideoCallFrom : text.incomingAudioCallFrom, caller)
            object["mode"] = notice.mode
            object["groupName"] = notice.groupName
            object["aps"] = [
                "alert": ["title": notice.groupName ?? caller, "body": body], "interruption-level": "passive",
                "thread-id": "calls",
            ]
        } else if missed {
            // In the device's language (English when it named none the catalogue has).
            let text = PushText.forLocale(notice.locale)
            let caller = notice.callerName.isEmpty ? text.unknownCaller : notice.callerName
            var alert: [String: Any] = [
                "title": text.missedCall, "body": PushText.format(text.missedCallFrom, caller),
            ]
            if localizationKeys {
                alert["title-loc-key"] = Self.missedCallTitleKey
                alert["loc-key"] = Self.missedCallBodyKey
                alert["loc-args"] = [caller]
            }
            object["aps"] = ["alert": alert, "sound": "default", "thread-id": "calls"]
        } else {
            object["aps"] = ["content-available": 1]
        }
        let payload =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])).map(
                Array.init) ?? []
        guard payload.count <= 4096 else { throw VoIPPush.Problem.payloadTooLarge(payload.count) }
        return PushRequest(
            payload: payload,
            headers: [
                ("apns-push-type", missed || quiet ? "alert" : "background"),
                ("apns-topic", bundleID),
                ("apns-priority", missed || quiet ? "10" : "5"),
                ("apns-expiration", String(Int64(notice.expiresAt.timeIntervalSince1970.rounded(.down)))),
                ("apns-collapse-id", "call_\(notice.callID)"),
                ("apns-id", notice.jobID),
            ])
    }

    public func send(_ job: PushJob) async -> PushSendResult {
        guard let transport else { return .response(status: 0, reason: PushChannelSummary.notConfiguredReason) }
        return await transport.send(job)
    }

    public func verdict(for result: PushSendResult) -> PushVerdict {
        PushVerdict(result) { APNsResponsePolicy.action(status: $0, reason: $1.map(APNsReason.init)) }
    }

    /// The VoIP channel closes the shared transport.
    public func shutdown() async {}
}

/// A ring built for a channel that only carries notices.
public struct NotARingChannel: Error, CustomStringConvertible, Sendable {
    public let channel: String
    public var description: String { "the \(channel) channel carries notices, not rings" }
}
