import SwitchboardWire

/// Which channel rings a device (SPEC §7): an iPhone through its PushKit VoIP token; an
/// Android phone through its maker's service when this server has that channel configured,
/// otherwise through FCM. The business layer never chooses. Pure: what is configured is an input.
public enum PushRouting {
    /// The token kinds a device may register.
    public static let channels = Set(PushChannelName.known.map(\.rawValue))
    /// The Android makers' own push services, in the order a device holding several is tried.
    public static let vendorChannels = ["huawei", "xiaomi", "oppo", "vivo"]

    /// The service behind a channel, as metrics and the status view name it.
    public static func provider(of channel: String) -> String {
        channel.hasPrefix("ios-") ? "apns" : channel
    }

    /// The platform a channel's tokens belong to: `ios` or `android`.
    public static func platform(of channel: String) -> String {
        channel.hasPrefix("ios-") ? "ios" : "android"
    }

    /// The maker's own push service for a phone's reported brand (`Build.MANUFACTURER`, lower
    /// case): Huawei's, Xiaomi's (also Redmi, POCO), OPPO's (also OnePlus, realme), vivo's (also
    /// iQOO); `nil` for the others.
    public static func makerChannel(brand: String?) -> String? {
        switch brand {
        case "huawei"?: "huawei"
        case "xiaomi"?, "redmi"?, "poco"?: "xiaomi"
        case "oppo"?, "oneplus"?, "realme"?: "oppo"
        case "vivo"?, "iqoo"?: "vivo"
        default: nil
        }
    }

    /// The channel a notice goes out on: an iPhone's `ios-alert` token (never its VoIP one), an
    /// Android phone's ring channel. `nil`: the device has no way to take a notice.
    public static func noticeChannel(
        platform: String, brand: String? = nil, tokens: Set<String>, configured: Set<String>
    ) -> String? {
        switch platform {
        case "ios": tokens.contains("ios-alert") ? "ios-alert" : nil
        default: ringChannel(platform: platform, brand: brand, tokens: tokens, configured: configured)
        }
    }

    /// The channel a ring goes out on for a device of `platform` holding tokens on `tokens`;
    /// `configured`: the channels this server can send on. An Android phone whose only tokens
    /// are on channels not configured still gets its ring job on one of them (FCM first), so the
    /// failure is recorded, not silent. `nil`: nothing here can ring it (an iPhone with only
    /// an alert token). Of several makers' tokens, the one of the phone's own brand goes first.
    public static func ringChannel(
        platform: String, brand: String? = nil, tokens: Set<String>, configured: Set<String>
    ) -> String? {
        switch platform {
        case "ios":
            return tokens.contains("ios-voip") ? "ios-voip" : nil
        case "android":
            let own = makerChannel(brand: brand)
            let vendors = vendorChannels.filter(tokens.contains).sorted { a, b in a == own && b != own }
            if let vendor = vendors.first(where: configured.contains) { return vendor }
            if tokens.contains("fcm") { return "fcm" }
            return vendors.first
        default:
            return nil
        }
    }
}
