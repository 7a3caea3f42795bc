import Foundation
import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardPOSIX

/// Everything `switchboard serve` can be told. Each setting has an embedded default, a key in
/// the JSON configuration file, an environment variable and (for the common ones) a flag.
/// Precedence: flag, then environment, then file, then default.
public struct ServerConfiguration: Sendable, Equatable {
    /// The HTTP listener and its limits.
    public var http = HTTPSettings()
    /// Which store holds the data.
    public var store = StoreSettings()
    /// How the calls' media is carried.
    public var media = MediaSettings()
    /// Every push channel.
    public var push = PushSettings()
    /// How calls ring and end.
    public var calls = CallSettings()
    /// The event feed.
    public var events = EventSettings()
    /// Passwords and sessions.
    public var accounts = AccountSettings()
    /// The signed gateway.
    public var gateway = GatewaySettings()
    /// Webhook deliveries to the app's own server.
    public var webhooks = WebhookSettings()
    /// The limits of the one limiter (``ServerLimits``).
    public var limits = ServerLimits()

    /// The lowest log level written.
    public var logLevel = LogLevel.info
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
            host: http.listen.host, port: http.listen.port,
            loopCount: http.loopThreads > 0 ? http.loopThreads : ProcessInfo.processInfo.activeProcessorCount,
            limits: HTTPParserLimits(maxHeaderBytes: http.maxHeaderBytes, maxBodyBytes: http.maxBodyBytes),
            headerTimeout: .seconds(http.headerTimeoutSeconds), idleTimeout: .seconds(http.idleTimeoutSeconds),
            maxConnections: http.maxConnections, maxConnectionsPerPeer: http.maxConnectionsPerAddress,
            unlimitedPeers: Set(http.trustedProxies.map(ClientAddress.canonical).flatMap { [$0, "::ffff:" + $0] }),
            admitBody: admitBody, bodyBufferBudget: http.bodyBufferBytes,
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
                    throw ConfigurationError(
                        message: "\(place): unknown setting '\(entry.key)' (did you mean '\(closest)'?)")
                }
                let text: String
                switch (setting.kind, entry.value) {
                case (.text, .string(let value)):
                    text = value
                case (.integer, .integer(let value)):
                    text = String(value)
                case (.integer, .string(let value)):
                    let hint = Int(value) != nil ? ": write \(value) without quotes" : ""
                    throw ConfigurationError(
                        message: "\(place): '\(entry.key)' must be an integer, not a string\(hint)")
                case (.integer, let other):
                    throw ConfigurationError(
                        message: "\(place): '\(entry.key)' must be an integer, not \(other.kindName)")
                case (.text, let other):
                    throw ConfigurationError(
                        message: "\(place): '\(entry.key)' must be a string in double quotes, not \(other.kindName)")
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
        guard store.engine != .postgres, !store.postgresURL.isEmpty else { return nil }
        return
            "postgresURL (SWITCHBOARD_POSTGRES_URL) is set but database is \(store.engine.rawValue): set database postgres (SWITCHBOARD_DATABASE=postgres) to use it, or leave postgresURL empty for the embedded SQLite database"
    }

    /// LiveKit's public development secret with a LiveKit that is not on this machine: anyone
    /// could mint tokens for its rooms and forge its webhooks (ending calls).
    var livekitSecretProblem: String? {
        guard media.backend != .relay, media.livekit.apiSecret == "secret" else { return nil }
        let host = URLComponents(string: media.livekit.url)?.host ?? ""
        guard !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else { return nil }
        return
            "livekitAPISecret (SWITCHBOARD_LIVEKIT_API_SECRET) is LiveKit's public development secret 'secret' while livekitURL \(media.livekit.url) is not on this machine: set the secret of your LiveKit server's keys"
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
