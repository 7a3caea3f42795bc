import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardPOSIX

/// Everything `switchboard serve` can be told. Each setting has an embedded default, a key in
/// the JSON configuration file, an environment variable and (for the common ones) a flag.
/// Precedence: flag, then environment, then file, then default.
public struct ServerConfiguration: Sendable, Equatable {
    /// `HOST:PORT` to listen on; port 0 picks a free port.
    public var listen = SocketAddress(host: "127.0.0.1", port: 8080)
    /// When set, a second listener that alone serves `/metrics` and `/admin/*` (plus the
    /// health checks), so they can stay on a private address; `listen` then answers 404 there.
    public var operatorListen: SocketAddress?
    /// Where the SQLite database lives.
    public var dataDirectory = "./var"
    /// Which store holds the data: `sqlite` (embedded, in `dataDirectory`) or `postgres`
    /// (at `postgresURL`, shared by every instance that names it).
    public var database = "sqlite"
    /// The PostgreSQL connection string (`postgresql://user:password@host:5432/db`, or
    /// `key=value` pairs) when `database` is `postgres`; its password is never logged.
    public var postgresURL = ""
    /// The lowest log level written.
    public var logLevel = LogLevel.info
    /// Request bodies larger than this get 413.
    public var maxBodyBytes = 1 << 20
    /// Request heads larger than this get 431.
    public var maxHeaderBytes = 16 * 1024
    /// Seconds a client has to send a request head.
    public var headerTimeoutSeconds = 10
    /// Seconds an idle keep-alive connection stays open.
    public var idleTimeoutSeconds = 75
    /// The most client connections open at once.
    public var maxConnections = 20_000
    /// The most connections one client address may hold (trusted proxies exempt); behind
    /// trusted proxies, the most event streams and long polls one forwarded address may hold.
    /// 0 means no cap.
    public var maxConnectionsPerAddress = 1000
    /// The most event streams and long polls one user may hold open on an instance; 0 means
    /// no cap.
    public var maxStreamsPerUser = 16
    /// The most bytes of request bodies still arriving, all connections together.
    public var bodyBufferBytes = 64 << 20
    /// Event-loop threads; 0 means one per core.
    public var loopThreads = 0
    /// Seconds in-flight requests get to finish after SIGTERM.
    public var shutdownGraceSeconds = 10
    /// Days events are kept; older ones are pruned and older cursors get 410.
    public var eventRetentionDays = 30
    /// Seconds between heartbeat comments on an idle event stream.
    public var eventHeartbeatSeconds = 15
    /// Seconds a call rings before unanswered invitations become `missed`.
    public var ringTimeoutSeconds = 45
    /// Seconds an active call's media room may stay empty before the call ends `connection_lost`.
    public var emptyRoomGraceSeconds = 90
    /// Seconds between empty-room checks (when rooms are managed).
    public var emptyRoomCheckSeconds = 10
    /// `relay` (the default: the built-in audio relay carries the calls' audio over
    /// `GET /calls/{id}/audio`, SPEC §10), `livekit` (the server closes rooms and removes
    /// participants over RoomService, and runs the watchdog) or `none` (LiveKit manages its rooms
    /// itself; LiveKit tokens are still minted).
    public var mediaBackend = "relay"
    /// The LiveKit URL clients connect to; the API URL is derived from it (ws → http, wss → https).
    public var livekitURL = "ws://127.0.0.1:7880"
    /// The LiveKit API key (the dev server's default).
    public var livekitAPIKey = "devkey"
    /// The LiveKit API secret (the dev server's default).
    public var livekitAPISecret = "secret"
    /// Milliseconds a RoomService call may take before the transition fails with 503.
    public var mediaDeadlineMilliseconds = 3000

    /// The iOS app's bundle id; VoIP pushes go to the topic `<bundle id>.voip`.
    public var apnsBundleID = "com.example.switchboard"
    /// APNs provider-token auth: the 10-character team id, key id, and the `.p8` key file.
    public var apnsTeamID = ""
    public var apnsKeyID = ""
    public var apnsKeyFile = ""
    /// APNs certificate auth instead: the client certificate and its key (PEM files).
    public var apnsCertificateFile = ""
    public var apnsCertificateKeyFile = ""
    /// Where APNs is; point both at an emulator (`http://` means h2c with prior knowledge).
    public var apnsProductionURL = "https://api.push.apple.com"
    public var apnsSandboxURL = "https://api.sandbox.push.apple.com"
    /// A CA file to trust for APNs instead of the system's (an emulator's certificate).
    public var apnsCAFile = ""
    /// Long-lived HTTP/2 connections per APNs environment.
    public var apnsConnections = 1
    /// The deadline of one APNs request; past it the attempt counts as a transport failure and
    /// is retried. A slow request holds back only its own job, never another token's.
    public var apnsRequestTimeoutSeconds = 10

    /// FCM HTTP v1 (Android rings): the Firebase service-account JSON (project, client email,
    /// RSA key, token URI); empty leaves the channel off.
    public var fcmServiceAccountFile = ""
    /// Where FCM is; point it at an emulator (`http://` means h2c with prior knowledge).
    public var fcmURL = "https://fcm.googleapis.com"
    /// A CA file to trust for FCM and its token endpoint instead of the system's.
    public var fcmCAFile = ""
    /// Long-lived HTTP/2 connections to FCM.
    public var fcmConnections = 1
    /// The deadline of one FCM request (a message, or fetching an access token).
    public var fcmRequestTimeoutSeconds = 10

    /// Huawei Push Kit (Huawei phones without Google services): the AppGallery Connect app id and
    /// its secret (OAuth2 client credentials); empty leaves the channel off.
    public var huaweiAppID = ""
    public var huaweiAppSecret = ""
    /// Where Huawei's push API and its token endpoint are (an emulator's, for local runs).
    public var huaweiURL = "https://push-api.cloud.huawei.com"
    public var huaweiTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// A CA file to trust for both instead of the system's.
    public var huaweiCAFile = ""
    /// The deadline of one Huawei request (a message, or fetching an access token).
    public var huaweiRequestTimeoutSeconds = 10

    /// Xiaomi MiPush (Xiaomi, Redmi, POCO phones): the app secret (`Authorization: key=`) and the
    /// app's package name; empty leaves the channel off. `xiaomiChannelID`: the notification
    /// channel the app registered for calls (Android 8+). `xiaomiRegion` picks the host (`cn`,
    /// `sgp`, `fr`, `ru`, `idmb`); `xiaomiURL`, when set, replaces it (an emulator).
    public var xiaomiAppSecret = ""
    public var xiaomiPackageName = ""
    public var xiaomiChannelID = ""
    public var xiaomiRegion = "cn"
    public var xiaomiURL = ""
    public var xiaomiCAFile = ""
    public var xiaomiRequestTimeoutSeconds = 10
    /// Connections to the maker's service: several, as it may answer over HTTP/1.1 (one request
    /// per connection at a time).
    public var xiaomiConnections = 4

    /// OPPO push (OPPO, OnePlus, realme): the app key and master secret (the auth request's
    /// signature) and the notification channel id the app registered for calls; empty leaves
    /// the channel off. `oppoURL`: China's host, or `https://api-intl.push.oppomobile.com`.
    public var oppoAppKey = ""
    public var oppoMasterSecret = ""
    public var oppoChannelID = ""
    public var oppoURL = "https://api.push.oppomobile.com"
    public var oppoCAFile = ""
    public var oppoRequestTimeoutSeconds = 10
    public var oppoConnections = 4

    /// vivo push (vivo, iQOO): the app id, app key and app secret (the auth request's
    /// signature); empty leaves the channel off.
    public var vivoAppID = ""
    public var vivoAppKey = ""
    public var vivoAppSecret = ""
    public var vivoURL = "https://api-push.vivo.com.cn"
    public var vivoCAFile = ""
    public var vivoRequestTimeoutSeconds = 10
    public var vivoConnections = 4

    /// The Xiaomi host to send to: `xiaomiURL`, else the region's.
    var xiaomiBaseURL: String { xiaomiURL.isEmpty ? XiaomiMessage.regionHosts[xiaomiRegion] ?? "" : xiaomiURL }

    /// The key for `/admin/*` (`Authorization: Bearer <key>`); empty disables those endpoints.
    public var adminKey = ""

    /// 32 bytes as base64: the key the secrets the server keeps in its database are stored under
    /// (AES-256-GCM): the devices' VoIP payload keys and the gateway apps' push credentials, so a
    /// database dump alone does not reveal them. Every instance on one store needs the same.
    /// Empty: neither can be registered (devices' pushes go unencrypted; apps use the server's
    /// push credentials).
    public var dataEncryptionKey = ""

    /// ``dataEncryptionKey``'s 32 bytes; nil when it is empty (checked when it was read).
    var dataEncryptionKeyBytes: [UInt8]? {
        dataEncryptionKey.isEmpty ? nil : Data(base64Encoded: dataEncryptionKey).map(Array.init)
    }

    /// A MaxMind-format city database (GeoLite2-City, GeoIP2-City or a DB-IP city lite file)
    /// for `GET /location/city`; empty: every lookup answers `null`. Read once at start-up.
    public var cityDatabaseFile = ""

    /// The proxies (addresses) whose `X-Forwarded-For` names the client, for the per-address
    /// limits (logins, registrations) and the city lookup; the rest are taken at their word as
    /// the peer. None by default: behind a proxy, name it (`127.0.0.1` for nginx on this machine).
    public var trustedProxies: Set<String> = []

    /// log2 of scrypt's N for new password hashes (r = 8, p = 1); 17 (OWASP's advice) costs
    /// ~128 MiB and a few hundred milliseconds a hash; at least 15. Hashes made with another
    /// cost keep verifying and are replaced at the user's next login.
    public var passwordScryptLogN = 17
    /// Password checks, and separately new-password hashes, that may wait for a scrypt thread.
    public var passwordHashQueue = 64

    /// `refuse` (the default) or `accept`: gateway requests signed the version 1 way, which
    /// does not cover the app and key ids, while app servers move to version 2.
    public var gatewaySignatureV1 = "refuse"

    /// The limits of the one limiter (``ServerLimits``).
    public var limits = ServerLimits()
    /// Days a session may go unused before it ends.
    public var sessionIdleDays = 30
    /// Days a session lives at most, however used.
    public var sessionMaxDays = 365
    /// Audio frames a relay socket may send per second, about twice real time (50 frames of
    /// 20 ms); more are dropped and counted, and a socket that keeps flooding is closed (4008).
    public var relayMaxFramesPerSecond = 100

    /// The embedded defaults.
    public init() {}

    /// The HTTP transport settings these values imply; `reportProblem` hears the transport's
    /// failures (accept, `epoll_wait`).
    public func httpConfiguration(
        errorResponder: @escaping HTTPErrorResponder,
        admitBody: (@Sendable (HTTPRequestHead) -> HTTPBodyAdmission)? = nil,
        reportProblem: @escaping @Sendable (HTTPTransportProblem) -> Void = { _ in }
    ) -> HTTPServerConfiguration {
        HTTPServerConfiguration(
            host: listen.host, port: listen.port,
            loopCount: loopThreads > 0 ? loopThreads : ProcessInfo.processInfo.activeProcessorCount,
            limits: HTTPParserLimits(maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes),
            headerTimeout: .seconds(headerTimeoutSeconds), idleTimeout: .seconds(idleTimeoutSeconds),
            maxConnections: maxConnections, maxConnectionsPerPeer: maxConnectionsPerAddress,
            unlimitedPeers: Set(trustedProxies.map(ClientAddress.canonical).flatMap { [$0, "::ffff:" + $0] }), admitBody: admitBody, bodyBufferBudget: bodyBufferBytes,
            errorResponder: errorResponder, reportProblem: reportProblem)
    }
}

/// A configuration value that is missing, malformed or out of range.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the setting and where it came from.
    public let message: String
    public var description: String { message }
}

extension ServerConfiguration {
    /// The environment variable naming a configuration file.
    public static let configFileEnvironment = "SWITCHBOARD_CONFIG"

    /// Resolves the configuration from its sources. Pure: the file's contents are passed in.
    ///
    /// - Parameters:
    ///   - flags: flag name to value, from the command line.
    ///   - environment: the process environment.
    ///   - file: the JSON configuration file's bytes and path, if one was named.
    public static func resolve(
        flags: [String: String], environment: [String: String], file: (path: String, contents: Data)?
    ) throws(ConfigurationError) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        let settings = ConfigurationSetting.all
        if let file {
            let parsed: ConfigurationFile
            do {
                parsed = try ConfigurationFile(parsing: Array(file.contents))
            } catch {
                throw ConfigurationError(message: "\(file.path): \(error)")
            }
            for entry in parsed.entries {
                let place = "\(file.path): line \(entry.line), column \(entry.column)"
                guard let setting = settings.first(where: { $0.key == entry.key }) else {
                    let closest = closestName(to: entry.key, among: settings.map(\.key))
                    throw ConfigurationError(message: "\(place): unknown setting '\(entry.key)' (did you mean '\(closest)'?)")
                }
                let text: String
                switch (setting.kind, entry.value) {
                case (.text, .string(let value)):
                    text = value
                case (.integer, .integer(let value)):
                    text = String(value)
                case (.integer, .string(let value)):
                    let hint = Int(value) != nil ? ": write \(value) without quotes" : ""
                    throw ConfigurationError(message: "\(place): '\(entry.key)' must be an integer, not a string\(hint)")
                case (.integer, let other):
                    throw ConfigurationError(message: "\(place): '\(entry.key)' must be an integer, not \(other.kindName)")
                case (.text, let other):
                    throw ConfigurationError(message: "\(place): '\(entry.key)' must be a string in double quotes, not \(other.kindName)")
                }
                if let problem = setting.apply(&configuration, text) {
                    throw ConfigurationError(message: "\(place): '\(entry.key)' \(problem)")
                }
            }
        }
        for setting in settings {
            if let text = environment[setting.environment], let problem = setting.apply(&configuration, text) {
                throw ConfigurationError(message: "\(setting.environment) \(problem)")
            }
        }
        for setting in settings {
            if let flag = setting.flag, let text = flags[flag], let problem = setting.apply(&configuration, text) {
                throw ConfigurationError(message: "\(flag) \(problem)")
            }
        }
        if let problem = configuration.livekitSecretProblem { throw ConfigurationError(message: problem) }
        if let problem = configuration.postgresURLProblem { throw ConfigurationError(message: problem) }
        return configuration
    }

    /// A PostgreSQL URL while the data goes to SQLite: the operator meant PostgreSQL, and
    /// would otherwise find the data in a file nobody backs up.
    var postgresURLProblem: String? {
        guard database != "postgres", !postgresURL.isEmpty else { return nil }
        return "postgresURL (SWITCHBOARD_POSTGRES_URL) is set but database is \(database): set database postgres (SWITCHBOARD_DATABASE=postgres) to use it, or leave postgresURL empty for the embedded SQLite database"
    }

    /// LiveKit's public development secret with a LiveKit that is not on this machine: anyone
    /// could mint tokens for its rooms and forge its webhooks (ending calls).
    var livekitSecretProblem: String? {
        guard mediaBackend != "relay", livekitAPISecret == "secret" else { return nil }
        let host = URLComponents(string: livekitURL)?.host ?? ""
        guard !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else { return nil }
        return "livekitAPISecret (SWITCHBOARD_LIVEKIT_API_SECRET) is LiveKit's public development secret 'secret' while livekitURL \(livekitURL) is not on this machine: set the secret of your LiveKit server's keys"
    }
}

extension ServerConfiguration {
    /// Every environment variable `serve` reads.
    public static var knownEnvironment: [String] {
        ConfigurationSetting.all.map(\.environment) + [configFileEnvironment]
    }

    /// One warning per `SWITCHBOARD_*` variable in `environment` that no setting reads (a typo
    /// would otherwise be ignored without a word), naming the closest known variable.
    public static func unknownEnvironmentWarnings(_ environment: [String: String]) -> [String] {
        let known = knownEnvironment
        return environment.keys.filter { $0.hasPrefix("SWITCHBOARD_") && !known.contains($0) }.sorted().map { name in
            "unknown environment variable \(name) is ignored (did you mean \(closestName(to: name, among: known))?)"
        }
    }
}

/// The name in `candidates` with the smallest edit distance to `name` (ties: the first).
func closestName(to name: String, among candidates: [String]) -> String {
    let target = Array(name.lowercased().utf8)
    var best = candidates.first ?? ""
    var bestDistance = Int.max
    for candidate in candidates {
        let distance = editDistance(target, Array(candidate.lowercased().utf8))
        if distance < bestDistance {
            best = candidate
            bestDistance = distance
        }
    }
    return best
}

/// Levenshtein distance (insertions, deletions and substitutions cost 1).
func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
    if a.isEmpty { return b.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in stride(from: 1, through: b.count, by: 1) {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}

