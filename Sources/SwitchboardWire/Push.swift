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
