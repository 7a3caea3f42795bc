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

    public init(title: String, content: String, data: [String: String]) {
        self.title = title
        self.content = content
        self.data = data
    }

    /// The notification for a stored data object: a ring (`type: call`) or a missed call
    /// (`type: call_ended`, `reason: missed`); with `everyEnding`, also the other endings
    /// (answered or declined on another device, cancelled), for services that have no silent
    /// message and show the ending in place of the ring instead (same ``notifyID(callID:)``).
    /// `nil` for an ending it is not asked for, and for anything that is not a data object.
    /// The text is in the data's `locale` (``PushText``), English without one. It is whole:
    /// each service's own limits apply when its message is built (``fitted(to:)``).
    public static func from(data bytes: [UInt8], everyEnding: Bool = false) -> VendorNotification? {
        guard let data = fields(of: bytes) else { return nil }
        let text = PushText.forLocale(data["locale"])
        let caller = data["callerName"].flatMap { $0.isEmpty ? nil : $0 } ?? text.unknownCaller
        let group = data["groupName"].flatMap { $0.isEmpty ? nil : $0 }
        switch (data["type"], data["reason"]) {
        case ("call"?, _), ("call_incoming"?, _):
            // A ring, or a call that does not ring this phone (do not disturb, or the caller's
            // ring list): the same words; the service's channel and the app decide the sound.
            let video = data["mode"] == "video"
            if let group {
                let content = PushText.format(video ? text.incomingVideoCallFrom : text.incomingAudioCallFrom, caller)
                return VendorNotification(title: group, content: content, data: data)
            }
            return VendorNotification(
                title: caller, content: video ? text.incomingVideoCall : text.incomingAudioCall, data: data)
        case ("call_ended"?, "missed"?):
            return VendorNotification(
                title: text.missedCall, content: PushText.format(text.missedCallFrom, caller), data: data)
        case ("call_ended"?, let reason?) where everyEnding:
            let content =
                switch reason {
                case "answered_elsewhere": text.answeredElsewhere
                case "declined_elsewhere": text.declinedElsewhere
                case "cancelled": text.callCancelled
                default: text.callEnded
                }
            return VendorNotification(title: group ?? caller, content: content, data: data)
        default:
            return nil
        }
    }

    /// A call that does not ring this phone (`call_incoming`): shown, but not on the app's
    /// call channel, so the maker's own channel sound applies rather than the ringtone.
    public var isQuiet: Bool { data["type"] == "call_incoming" }

    /// The notification as a service with `limits` takes it: title and content clipped by
    /// that service's own counting, whole graphemes only, with `…` where text was cut.
    public func fitted(to limits: VendorTextLimits) -> VendorNotification {
        VendorNotification(
            title: limits.clipped(title, to: limits.title), content: limits.clipped(content, to: limits.content),
            data: data)
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

}

/// How long a notification's title and content may be on one maker's service, counted the way
/// that service counts. Pure.
public struct VendorTextLimits: Sendable, Equatable {
    /// How a service measures text.
    public enum Counting: Sendable, Equatable {
        /// Every Unicode scalar is one (OPPO and Xiaomi: "Chinese and English characters each
        /// count as one"; an emoji of several scalars counts each of them, to be safe).
        case scalars
        /// An ASCII character is one unit and every other scalar two (vivo: a Chinese character
        /// is two English ones).
        case asciiOneOtherTwo
    }

    /// The longest title and content, in the service's units.
    public var title: Int
    public var content: Int
    public var counting: Counting

    public init(title: Int, content: Int, counting: Counting) {
        self.title = title
        self.content = content
        self.counting = counting
    }

    /// vivo: a title of 20 Chinese characters (40 English), content of 50 (100): vivo answers
    /// 10056/10058 to anything longer.
    public static let vivo = VendorTextLimits(title: 40, content: 100, counting: .asciiOneOtherTwo)
    /// OPPO: a title of 50 characters, content of 200 (the standard style), emoji counting one.
    public static let oppo = VendorTextLimits(title: 50, content: 200, counting: .scalars)
    /// Xiaomi: a title shorter than 50 characters, a description shorter than 128.
    public static let xiaomi = VendorTextLimits(title: 49, content: 127, counting: .scalars)

    /// The text's length in this service's units.
    public func length(of text: some StringProtocol) -> Int {
        text.unicodeScalars.reduce(0) { $0 + cost(of: $1) }
    }

    /// `text` when it fits in `limit` units; else its longest run of whole graphemes that fits
    /// with `…` after it.
    public func clipped(_ text: String, to limit: Int) -> String {
        guard length(of: text) > limit else { return text }
        let ellipsis = "…"
        let budget = limit - length(of: ellipsis)
        var used = 0
        var end = text.startIndex
        for character in text {
            let cost = length(of: String(character))
            guard used + cost <= budget else { break }
            used += cost
            end = text.index(after: end)
        }
        return String(text[..<end]) + ellipsis
    }

    private func cost(of scalar: Unicode.Scalar) -> Int {
        switch counting {
        case .scalars: 1
        case .asciiOneOtherTwo: scalar.isASCII ? 1 : 2
        }
    }
}
