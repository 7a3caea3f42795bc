import Synchronization

/// The state both the loop thread and the public API touch: faults, inboxes, statistics.
struct EmulatorState: Sendable {
    var faults: FaultBook
    var inbox: InboxStore
    var stats = APNsEmulatorStats()
    /// The FCM stand-in's access tokens and faults.
    var fcm = FCMEmulatorState()
    /// The Huawei stand-in's access tokens and scripted codes.
    var huawei = VendorEmulatorState()
    /// The Xiaomi, OPPO and vivo stand-ins' auth tokens and scripted codes.
    var xiaomi = VendorEmulatorState()
    var oppo = VendorEmulatorState()
    var vivo = VendorEmulatorState()

    /// The vendor stand-ins' channel names.
    static let vendorChannels: Set<String> = ["huawei", "xiaomi", "oppo", "vivo"]

    /// Runs `body` on a vendor stand-in's state by channel name; `nil` for another name.
    mutating func withVendor<R>(_ channel: String, _ body: (inout VendorEmulatorState) -> R) -> R? {
        switch channel {
        case "huawei": body(&huawei)
        case "xiaomi": body(&xiaomi)
        case "oppo": body(&oppo)
        case "vivo": body(&vivo)
        default: nil
        }
    }
    /// The apns-ids delivered so far (to count resends of processed pushes); forgotten whole
    /// past `deliveredIDLimit`, so a long-running emulator's memory stays bounded.
    var deliveredIDs: Set<String> = []
    static let deliveredIDLimit = 1_000_000

    /// Notes a delivery of `apnsID`; counts it as a duplicate when it was delivered before.
    mutating func noteDelivery(apnsID: String) {
        if deliveredIDs.count >= Self.deliveredIDLimit { deliveredIDs.removeAll() }
        if !deliveredIDs.insert(apnsID.lowercased()).inserted { stats.duplicateDeliveries += 1 }
    }

    /// Counts one push answer under `"200"` or `"<status> <reason>"`.
    mutating func countAnswer(status: Int, reason: String?) {
        let key = reason.map { "\(status) \($0)" } ?? String(status)
        stats.responses[key, default: 0] += 1
    }
}

/// Holds ``EmulatorState`` under a `Mutex`; every access is short and never blocks on I/O.
final class EmulatorShared: Sendable {
    let state: Mutex<EmulatorState>
    /// In-process inbox readers (``APNsEmulator/inbox(token:after:waitingUpTo:)``).
    let inboxWaiters = InboxWaiters()

    init(faults: [APNsFault], inboxCapacity: Int) {
        state = Mutex(EmulatorState(faults: FaultBook(faults), inbox: InboxStore(capacity: inboxCapacity)))
    }
}

/// A response the loop submits on a stream.
struct EmulatorResponse: Sendable {
    var status: Int
    var headers: [APNsHeader] = []
    var body: [UInt8] = []
    /// Whether this answers a push (and so is counted in the statistics when sent).
    var isPushAnswer = false
    /// The APNs reason of an error answer, for the statistics.
    var reason: String?

    /// A JSON response (`content-type: application/json`).
    static func json(_ status: Int, _ body: [UInt8], headers: [APNsHeader] = []) -> EmulatorResponse {
        EmulatorResponse(
            status: status, headers: headers + [APNsHeader("content-type", "application/json")], body: body)
    }

    /// `{"error":"…"}` for the inbox and control endpoints.
    static func error(_ status: Int, _ message: String) -> EmulatorResponse {
        var json = JSONWriter()
        json.beginObject()
        json.member("error", message)
        json.endObject()
        return .json(status, json.bytes)
    }
}
