/// `POST /voip/devices` body.
public struct RegisterVoIPDevice: Codable, Sendable, Equatable {
    /// A UUID the app chose for this installation.
    public var deviceId: String
    /// The PushKit VoIP token, as hex.
    public var pushToken: String
    /// `sandbox` or `production`, as the app was built: reported, never guessed.
    public var environment: String

    public init(deviceId: String, pushToken: String, environment: String) {
        self.deviceId = deviceId
        self.pushToken = pushToken
        self.environment = environment
    }
}

/// A registered push device, as its owner sees it (the token only as a short suffix).
public struct VoIPDevice: Codable, Sendable, Equatable {
    public var deviceId: String
    public var environment: String
    /// The last 8 hex digits of the token.
    public var tokenSuffix: String
    public var updatedAt: String

    public init(deviceId: String, environment: String, tokenSuffix: String, updatedAt: String) {
        self.deviceId = deviceId
        self.environment = environment
        self.tokenSuffix = tokenSuffix
        self.updatedAt = updatedAt
    }
}

/// One token in a `POST /push/devices` body.
public struct PushTokenRegistration: Codable, Sendable, Equatable {
    public var token: String
    /// For `ios-voip` and `ios-alert` only: `sandbox` or `production`, as the app was built.
    public var environment: String?

    public init(token: String, environment: String? = nil) {
        self.token = token
        self.environment = environment
    }
}

/// `POST /push/devices` body: every token the installation has now, by channel (tokens it
/// registered before and no longer lists are removed).
public struct RegisterPushDevice: Codable, Sendable, Equatable {
    /// A UUID the app chose for this installation.
    public var deviceId: String
    /// `ios` or `android`.
    public var platform: String
    /// On Android, the maker (`Build.MANUFACTURER`), e.g. `huawei`, `xiaomi`.
    public var brand: String?
    /// By channel: `ios-voip` and `ios-alert` on iOS; `fcm`, `huawei`, `xiaomi`, `oppo` and
    /// `vivo` on Android.
    public var tokens: [String: PushTokenRegistration]

    public init(deviceId: String, platform: String, brand: String? = nil, tokens: [String: PushTokenRegistration]) {
        self.deviceId = deviceId
        self.platform = platform
        self.brand = brand
        self.tokens = tokens
    }
}

/// A registered token, as its owner sees it.
public struct PushTokenInfo: Codable, Sendable, Equatable {
    public var channel: String
    /// `sandbox` or `production` for APNs tokens, null for the others.
    public var environment: String?
    /// The token's last 8 characters.
    public var tokenSuffix: String

    public init(channel: String, environment: String?, tokenSuffix: String) {
        self.channel = channel
        self.environment = environment
        self.tokenSuffix = tokenSuffix
    }
}

/// A registered installation and its tokens.
public struct PushDeviceInfo: Codable, Sendable, Equatable {
    public var deviceId: String
    public var platform: String
    public var brand: String?
    public var tokens: [PushTokenInfo]
    public var updatedAt: String

    public init(deviceId: String, platform: String, brand: String?, tokens: [PushTokenInfo], updatedAt: String) {
        self.deviceId = deviceId
        self.platform = platform
        self.brand = brand
        self.tokens = tokens
        self.updatedAt = updatedAt
    }
}
