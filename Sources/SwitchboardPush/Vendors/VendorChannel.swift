import Foundation
import SwitchboardPushCore

/// The `xiaomi`, `oppo` and `vivo` channels: the phone makers' own push services, which wake a
/// killed app through a notification (``VendorNotification``) with the ring's data object
/// attached. Each has its transport and its reason table. Every ending is told: Xiaomi carries
/// the endings that show nothing as pass-through data, which the running app takes its
/// notification down on; OPPO and vivo, which have no silent message, show the ending in place
/// of the ringing notification (the same notification id replaces it).
public struct VendorChannel: DataMessageChannel {
    public let name: String
    public let summary: PushChannelSummary
    public let transport: (any PushTransport)?
    private let table: ResultCodeTable

    public var provider: String { name }

    private init(
        name: String, transport: (any PushTransport)?, summary: PushChannelSummary, table: ResultCodeTable
    ) {
        self.name = name
        self.transport = transport
        self.summary = summary
        self.table = table
    }

    /// Xiaomi MiPush; `transport` `nil`: not configured.
    public static func xiaomi(
        transport: (any PushTransport)?, auth: String = "", endpoints: String = "", caFile: String = ""
    ) -> Self {
        Self(
            name: "xiaomi", transport: transport,
            summary: summary(
                "xiaomi", transport, auth, endpoints, caFile,
                hint: "set xiaomiAppSecret and xiaomiPackageName (Xiaomi push console)"),
            table: XiaomiResponsePolicy.table)
    }

    /// OPPO push; `transport` `nil`: not configured.
    public static func oppo(
        transport: (any PushTransport)?, auth: String = "", endpoints: String = "", caFile: String = ""
    ) -> Self {
        Self(
            name: "oppo", transport: transport,
            summary: summary(
                "oppo", transport, auth, endpoints, caFile,
                hint: "set oppoAppKey, oppoMasterSecret and oppoChannelID (OPPO push console)"),
            table: OPPOResponsePolicy.table)
    }

    /// vivo push; `transport` `nil`: not configured.
    public static func vivo(
        transport: (any PushTransport)?, auth: String = "", endpoints: String = "", caFile: String = ""
    ) -> Self {
        Self(
            name: "vivo", transport: transport,
            summary: summary(
                "vivo", transport, auth, endpoints, caFile,
                hint: "set vivoAppID, vivoAppKey and vivoAppSecret (vivo push console)"),
            table: VivoResponsePolicy.table)
    }

    private static func summary(
        _ name: String, _ transport: (any PushTransport)?, _ auth: String, _ endpoints: String, _ caFile: String,
        hint: String
    ) -> PushChannelSummary {
        PushChannelSummary(
            channel: name, provider: name, configured: transport != nil, auth: auth, endpoints: endpoints,
            caFile: caFile,
            hint: transport == nil ? hint : "", optional: true)
    }

    public func action(status: Int, reason: String?) -> PushAction { table.action(status: status, reason: reason) }

    /// The table's verdict; over the day's quota, no retry within the hour.
    public func verdict(for result: PushSendResult) -> PushVerdict {
        var verdict = PushVerdict(result) { action(status: $0, reason: $1) }
        if table.quota.contains(verdict.reason) {
            verdict.retryAfter = max(verdict.retryAfter ?? 0, ResultCodeTable.quotaRetryFloor)
        }
        return verdict
    }

    /// Every ending, on every one of them (the service's message builder decides its shape).
    public func noticeRequest(for notice: PushNotice) throws -> PushRequest? {
        try endedDataRequest(for: notice)
    }
}
