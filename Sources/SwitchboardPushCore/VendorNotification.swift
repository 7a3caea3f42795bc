import Foundation

/// What a ring or a missed call says on an Android maker's own push service (Xiaomi, OPPO,
/// vivo). Those services wake an app that the phone's battery manager killed only through a
/// notification message, and OPPO and vivo have no other kind: the ring's data object
/// (``FCMMessage/ringData``, the same fields as FCM's) rides along as the notification's custom
/// data, and the app reads it when the notification is shown or tapped. Pure.
public struct VendorNotification: Sendable, Equatable {
    public var title: String
    public var content: String
    /// The data object's fields (`type`, `callId`, …), all strings.
    public var data: [String: String]

    /// The longest title and content every one of these services takes (vivo's: 40 and 100
    /// characters; OPPO's and Xiaomi's are longer).
    public static let maxTitleCharacters = 40
    public static let maxContentCharacters = 100

    public init(title: String, content: String, data: [String: String]) {
        self.title = Self.clipped(title, to: Self.maxTitleCharacters)
        self.content = Self.clipped(content, to: Self.maxContentCharacters)
        self.data = data
    }

    /// The notification for a stored data object: a ring (`type: call`) or a missed call
    /// (`type: call_ended`, `reason: missed`); `nil` for the other endings, which have nothing
    /// to show (and for anything that is not a data object).
    public static func from(data bytes: [UInt8]) -> VendorNotification? {
        guard let data = fields(of: bytes) else { return nil }
        let caller = data["callerName"].flatMap { $0.isEmpty ? nil : $0 } ?? "Unknown caller"
        switch (data["type"], data["reason"]) {
        case ("call"?, _):
            let kind = data["mode"] == "video" ? "video call" : "audio call"
            if let group = data["groupName"], !group.isEmpty {
                return VendorNotification(title: group, content: "Incoming \(kind) from \(caller)", data: data)
            }
            return VendorNotification(title: caller, content: "Incoming \(kind)", data: data)
        case ("call_ended"?, "missed"?):
            return VendorNotification(title: "Missed call", content: "Missed call from \(caller)", data: data)
        default:
            return nil
        }
    }

    /// The string fields of a stored data object.
    public static func fields(of bytes: [UInt8]) -> [String: String]? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else { return nil }
        return object.compactMapValues { $0 as? String }
    }

    /// The data as one JSON string (the services' custom-data fields take a string).
    public var dataJSON: String {
        (try? JSONSerialization.data(withJSONObject: data, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// A number that is the same for every message about one call (a ring and its missed-call
    /// notice replace each other on services that have notification ids): FNV-1a of the id,
    /// folded into 1…2³¹−1.
    public static func notifyID(callID: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in callID.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int(hash & 0x7FFF_FFFF) | 1
    }

    private static func clipped(_ text: String, to count: Int) -> String {
        text.count <= count ? text : String(text.prefix(count - 1)) + "…"
    }
}
