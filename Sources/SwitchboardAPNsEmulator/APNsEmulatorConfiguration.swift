import SwitchboardCrypto

/// How an ``APNsEmulator`` listens and what it accepts.
///
/// ```swift
/// var configuration = APNsEmulatorConfiguration(port: 0)
/// configuration.bundleID = "com.example.app"
/// configuration.teamID = "DEF123GHIJ"
/// configuration.keyID = "ABC123DEFG"
/// configuration.publicKey = signingKey.publicKey
/// ```
public struct APNsEmulatorConfiguration: Sendable {
    /// The address to listen on: an IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// The port; 0 picks a free one (``APNsEmulator/start()`` returns it).
    public var port: Int
    /// The app's bundle id: the one topic accepted is `<bundleID>.voip`. Without it any topic
    /// ending in `.voip` is accepted.
    public var bundleID: String?
    /// The Team ID a provider token's `iss` must name; without it any `iss` is accepted.
    public var teamID: String?
    /// The Key ID a provider token's `kid` must name; without it any `kid` is accepted.
    public var keyID: String?
    /// The public half of the ES256 key provider tokens must be signed with. Without it tokens
    /// are checked for structure, `alg`, `kid`, `iss` and age only, not for their signature.
    public var publicKey: ES256PublicKey?
    /// Faults in force from the start.
    public var faults: [APNsFault]
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` advertised to every client.
    public var maxConcurrentStreams: Int
    /// The largest payload accepted (APNs: 5120 bytes for VoIP); larger ones get 413.
    public var maxPayloadBytes: Int
    /// A provider token older than this gets 403 `ExpiredProviderToken` (APNs: one hour).
    public var providerTokenLifetimeSeconds: Int64
    /// Messages kept per device token's inbox (older ones are dropped; indices go on).
    public var inboxCapacity: Int
    /// The longest an inbox long poll is held, whatever its `wait` asks for.
    public var maxLongPollSeconds: Int
    /// TLS with ALPN `h2`; `nil` for cleartext h2c with prior knowledge.
    public var tls: APNsEmulatorTLS?
    /// Wall-clock time for token ages, 410 timestamps and `receivedAt`.
    public var clock: APNsEmulatorClock
    /// Makes the `apns-id` for a push that did not send one.
    public var makeID: @Sendable () -> String
    /// The service account FCM requests must come from; `nil` leaves the FCM stand-in off.
    public var fcmAccount: FCMEmulatorAccount?
    /// How long the FCM stand-in's access tokens live (Google's: an hour).
    public var fcmAccessTokenSeconds: Int64 = 3600
    /// The Huawei app whose client credentials are accepted; `nil` leaves the Huawei stand-in off.
    public var huaweiApp: HuaweiEmulatorApp?
    /// The Xiaomi app (package and secret) accepted; `nil` leaves the Xiaomi stand-in off.
    public var xiaomiApp: XiaomiEmulatorApp?
    /// The OPPO app (key and master secret) accepted; `nil` leaves the OPPO stand-in off.
    public var oppoApp: OPPOEmulatorApp?
    /// The vivo app (id, key and secret) accepted; `nil` leaves the vivo stand-in off.
    public var vivoApp: VivoEmulatorApp?
    /// Receives one JSON line per push answered and per connection-level event; `nil` for silence.
    public var log: (@Sendable (String) -> Void)?

    /// Creates a configuration listening on `host:port` (default `127.0.0.1:2197`, APNs's
    /// alternative port) with APNs's limits.
    public init(host: String = "127.0.0.1", port: Int = 2197) {
        self.host = host
        self.port = port
        bundleID = nil
        teamID = nil
        keyID = nil
        publicKey = nil
        faults = []
        maxConcurrentStreams = 1000
        maxPayloadBytes = 5120
        providerTokenLifetimeSeconds = 3600
        inboxCapacity = 1000
        maxLongPollSeconds = 60
        tls = nil
        clock = .system
        makeID = { SecureRandom.uuid() }
        log = nil
        fcmAccount = nil
    }

    var validationPolicy: PushValidator.Policy {
        var policy = PushValidator.Policy(bundleID: bundleID, maxPayloadBytes: maxPayloadBytes)
        policy.token = ProviderTokenVerifier.Policy(
            teamID: teamID, keyID: keyID, publicKey: publicKey, lifetimeSeconds: providerTokenLifetimeSeconds)
        return policy
    }
}
