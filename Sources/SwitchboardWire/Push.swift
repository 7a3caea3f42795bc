/// The APNs environment an iOS app was signed for, from its `aps-environment` entitlement:
/// `sandbox` for development builds, `production` for TestFlight and the App Store. The app
/// reports it; the server never guesses it.
///
/// ```swift
/// #if DEBUG
/// let environment = PushEnvironment.sandbox
/// #else
/// let environment = PushEnvironment.production
/// #endif
/// ```
public enum PushEnvironment: WireEnum {
    case sandbox
    case production
    case unknown(String)

    public static let known: [PushEnvironment] = [.sandbox, .production]

    public var rawValue: String {
        switch self {
        case .sandbox: "sandbox"
        case .production: "production"
        case .unknown(let value): value
        }
    }
}

/// The operating system of a push device.
public enum DevicePlatform: WireEnum {
    case ios
    case android
    case unknown(String)

    public static let known: [DevicePlatform] = [.ios, .android]

    public var rawValue: String {
        switch self {
        case .ios: "ios"
        case .android: "android"
        case .unknown(let value): value
        }
    }
}

/// `POST /voip/devices` body.
public struct RegisterVoIPDevice: Codable, Sendable, Equatable {
    /// A UUID the app chose for this installation.
    public var deviceId: String
    /// The PushKit VoIP token, as hex.
    public var pushToken: String
    /// As the app was built: reported, never guessed.
    public var environment: PushEnvironment
    /// The key this device's VoIP pushes are encrypted with (SPEC §3); none: plain pushes.
    public var payloadKey: PayloadKeyRegistration?
    /// The installation's language as a BCP 47 tag (`zh-Hant-TW`, `de`), for the text of its
    /// notices; none: the one it registered before, else English.
    public var locale: String?

    public init(
        deviceId: String, pushToken: String, environment: PushEnvironment, payloadKey: PayloadKeyRegistration? = nil,
        locale: String? = nil
    ) {
        self.locale = locale
        self.deviceId = deviceId
        self.pushToken = pushToken
        self.environment = environment
        self.payloadKey = payloadKey
    }
}

/// A device's VoIP payload key: 256 bits the device made and keeps, and the id its pushes name
/// it by (`kid`). Sent once over TLS; the server stores it encrypted and never shows it again.
public struct PayloadKeyRegistration: Codable, Sendable, Equatable {
    /// 1 to 64 letters, digits, `.`, `_` or `-`.
    public var id: String
    /// The 32 bytes, base64 (standard alphabet, padded).
    public var key: String

    public init(id: String, key: String) {
        self.id = id
        self.key = key
    }
}

/// A registered push device, as its owner sees it (the token only as a short suffix).
public struct VoIPDevice: Codable, Sendable, Equatable {
    public var deviceId: String
    public var environment: PushEnvironment
    /// The last 8 hex digits of the token.
    public var tokenSuffix: String
    /// The id of the payload key its pushes are encrypted with; nil: plain pushes.
    public var payloadKeyId: String?
    public var updatedAt: String

    public init(
        deviceId: String, environment: PushEnvironment, tokenSuffix: String, payloadKeyId: String? = nil,
        updatedAt: String
    ) {
        self.deviceId = deviceId
        self.environment = environment
        self.tokenSuffix = tokenSuffix
        self.payloadKeyId = payloadKeyId
        self.updatedAt = updatedAt
    }
}

/// One token in a `POST /push/devices` body.
public struct PushTokenRegistration: Codable, Sendable, Equatable {
    public var token: String
    /// For `ios-voip` and `ios-alert` only: as the app was built.
    public var environment: PushEnvironment?
    /// For `ios-voip` only: the key its pushes are encrypted with (SPEC §3).
    public var payloadKey: PayloadKeyRegistration?

    public init(token: String, environment: PushEnvironment? = nil, payloadKey: PayloadKeyRegistration? = nil) {
        self.token = token
        self.environment = environment
        self.payloadKey = payloadKey
    }
}

/// `POST /push/devices` body: every token the installation has now, by channel (tokens it
/// registered before and no longer lists are removed).
public struct RegisterPushDevice: Codable, Sendable, Equatable {
    /// A UUID the app chose for this installation.
    public var deviceId: String
    public var platform: DevicePlatform
    /// On Android, the maker (`Build.MANUFACTURER`), e.g. `huawei`, `xiaomi`.
    public var brand: String?
    /// By channel (``PushChannelName``'s names): `ios-voip` and `ios-alert` on iOS; `fcm`,
    /// `huawei`, `xiaomi`, `oppo` and `vivo` on Android.
    public var tokens: [String: PushTokenRegistration]
    /// The installation's language as a BCP 47 tag (`zh-Hant-TW`, `de`), for the text of its
    /// notifications and alerts; none: the one it registered before, else English.
    public var locale: String?

    public init(
        deviceId: String, platform: DevicePlatform, brand: String? = nil, tokens: [String: PushTokenRegistration],
        locale: String? = nil
    ) {
        self.locale = locale
        self.deviceId = deviceId
        self.platform = platform
        self.brand = brand
        self.tokens = tokens
    }
}

/// The kinds of push token a device registers, each the channel that sends to it.
public enum PushChannelName: WireEnum {
    /// PushKit VoIP (what rings an iPhone).
    case iosVoIP
    /// Ordinary APNs to the app (an iPhone's notices).
    case iosAlert
    case fcm
    case huawei
    case xiaomi
    case oppo
    case vivo
    case unknown(String)

    public static let known: [PushChannelName] = [.iosVoIP, .iosAlert, .fcm, .huawei, .xiaomi, .oppo, .vivo]

    public var rawValue: String {
        switch self {
        case .iosVoIP: "ios-voip"
        case .iosAlert: "ios-alert"
        case .fcm: "fcm"
        case .huawei: "huawei"
        case .xiaomi: "xiaomi"
        case .oppo: "oppo"
        case .vivo: "vivo"
        case .unknown(let value): value
        }
    }
}

/// A registered token, as its owner sees it.
public struct PushTokenInfo: Codable, Sendable, Equatable {
    public var channel: PushChannelName
    /// For APNs tokens; null for the others.
    public var environment: PushEnvironment?
    /// The token's last 8 characters.
    public var tokenSuffix: String
    /// `ios-voip` only: the id of the payload key its pushes are encrypted with.
    public var payloadKeyId: String?

    public init(
        channel: PushChannelName, environment: PushEnvironment?, tokenSuffix: String, payloadKeyId: String? = nil
    ) {
        self.channel = channel
        self.environment = environment
        self.tokenSuffix = tokenSuffix
        self.payloadKeyId = payloadKeyId
    }
}

/// A registered installation and its tokens.
public struct PushDeviceInfo: Codable, Sendable, Equatable {
    public var deviceId: String
    public var platform: DevicePlatform
    public var brand: String?
    public var tokens: [PushTokenInfo]
    public var updatedAt: String
    /// The language its pushes are worded in, as registered (BCP 47); null: English.
    public var locale: String?

    public init(
        deviceId: String, platform: DevicePlatform, brand: String?, tokens: [PushTokenInfo], updatedAt: String,
        locale: String? = nil
    ) {
        self.locale = locale
        self.deviceId = deviceId
        self.platform = platform
        self.brand = brand
        self.tokens = tokens
        self.updatedAt = updatedAt
    }
}
