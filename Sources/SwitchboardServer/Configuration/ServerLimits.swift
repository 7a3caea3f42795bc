import SwitchboardCore

/// Every limit of the server's one limiter (``RateLimiter``), each a setting with a default no
/// honest app meets. Counted in the store: they hold across restarts and instances.
public struct ServerLimits: Sendable, Equatable {
    /// Accounts registered from one client address.
    public var registrationsPerAddress = RateLimit.per(3600, 20)
    /// Calls one user starts (`POST /calls`), wherever.
    public var callsPerCaller = RateLimit.per(600, 30)
    /// Calls one user starts to one callee, or in one group.
    public var callsPerCallee = RateLimit.per(60, 4)
    /// Rings (calls, not push attempts) to one device, whoever sends them (calls and the
    /// gateway alike); the refusal cuts the device off for the breaker's time.
    public var ringsPerDevice = RateLimit.per(60, 5, breakerSeconds: 600)
    /// Gateway signals that ring one callee of an app; past it, further signals are dropped silently.
    public var gatewaySignalsPerCallee = RateLimit.per(600, 3)
    /// Messages one user sends (conversation, group and end-to-end encrypted ones).
    public var messagesPerUser = RateLimit.per(60, 60)
    /// Call Directory entries one user changes (each added or removed number counts one).
    public var callDirectoryChangesPerUser = RateLimit.per(3600, 5000)
    /// Live-location starts and updates one user sends.
    public var liveLocationUpdatesPerUser = RateLimit.per(60, 120)

    public init() {}

    /// Every count raised to a million: for developer tools and benchmarks that drive the
    /// server far harder than people do (the demo, the wake-up harness), never for production.
    public static var lifted: ServerLimits {
        var limits = ServerLimits()
        for path: WritableKeyPath<ServerLimits, RateLimit> in [
            \.registrationsPerAddress, \.callsPerCaller, \.callsPerCallee, \.ringsPerDevice, \.gatewaySignalsPerCallee,
            \.messagesPerUser, \.callDirectoryChangesPerUser, \.liveLocationUpdatesPerUser,
        ] {
            limits[keyPath: path].count = 1_000_000
        }
        return limits
    }

    /// A limit as a setting's text: `COUNT/SECONDS` (`5/60`).
    static func parse(_ text: String) -> RateLimit? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]), let seconds = Int64(parts[1]),
            (1...1_000_000).contains(count), (1...86_400).contains(seconds)
        else { return nil }
        return RateLimit.per(seconds, count)
    }

    /// A limit as its setting's text.
    static func text(_ limit: RateLimit) -> String { "\(limit.count)/\(limit.windowMS / 1000)" }

    // MARK: Keys (one namespace per limit)

    static func registrationKey(address: String) -> String { "register:\(address)" }
    static func callerKey(_ userID: String) -> String { "calls-caller:\(userID)" }
    static func calleeKey(caller: String, scope: String) -> String { "calls-callee:\(caller)\u{1F}\(scope)" }
    static func deviceRingKey(_ deviceID: String) -> String { "ring-device:\(deviceID)" }
    static func gatewayCalleeKey(app: String, user: String) -> String { "gateway-callee:\(app)\u{1F}\(user)" }
    static func messageKey(_ userID: String) -> String { "messages:\(userID)" }
    static func callDirectoryKey(_ userID: String) -> String { "call-directory:\(userID)" }
    static func liveLocationKey(_ userID: String) -> String { "live-location:\(userID)" }
}
