import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardPOSIX

/// One setting: its names in each source, its help text, and how a text value applies.
public struct ConfigurationSetting: Sendable {
    /// The key in the JSON configuration file.
    public let key: String
    /// The environment variable.
    public let environment: String
    /// The command-line flag, if it has one.
    public let flag: String?
    /// One line of help, including the default.
    public let help: String
    /// What the configuration file must give for it: a JSON string or a JSON integer.
    public let kind: Kind
    let apply: @Sendable (inout ServerConfiguration, String) -> String?

    /// The JSON type a setting takes in the configuration file (the environment and flags are text).
    public enum Kind: Sendable {
        case text
        case integer
    }

    fileprivate init(
        key: String, environment: String, flag: String?, help: String, kind: Kind = .text,
        apply: @escaping @Sendable (inout ServerConfiguration, String) -> String?
    ) {
        self.key = key
        self.environment = environment
        self.flag = flag
        self.help = help
        self.kind = kind
        self.apply = apply
    }

    /// Every setting `serve` knows.
    public static let all: [ConfigurationSetting] = [
        ConfigurationSetting(key: "listen", environment: "SWITCHBOARD_LISTEN", flag: "--listen",
                             help: "HOST:PORT to listen on; port 0 picks a free port (default 127.0.0.1:8080)") { config, text in
            guard let address = SocketAddress.parse(text) else { return "must be HOST:PORT, like 127.0.0.1:8080" }
            config.listen = address
            return nil
        },
        ConfigurationSetting(key: "operatorListen", environment: "SWITCHBOARD_OPERATOR_LISTEN", flag: "--operator-listen",
                             help: "HOST:PORT of a second listener that alone serves /metrics and /admin/* (and /healthz, /readyz); empty keeps them on listen (default empty)") { config, text in
            if text.isEmpty {
                config.operatorListen = nil
                return nil
            }
            guard let address = SocketAddress.parse(text) else { return "must be HOST:PORT, like 127.0.0.1:9090, or empty" }
            config.operatorListen = address
            return nil
        },
        ConfigurationSetting(key: "dataDir", environment: "SWITCHBOARD_DATA_DIR", flag: "--data-dir",
                             help: "directory for the SQLite database (default ./var)") { config, text in
            guard !text.isEmpty else { return "must not be empty" }
            config.dataDirectory = text
            return nil
        },
        text("database", "SWITCHBOARD_DATABASE", "sqlite (embedded, in dataDir) or postgres (at postgresURL, shared by several instances) (default sqlite)", \.database) { text in
            ["sqlite", "postgres"].contains(text) ? nil : "must be sqlite or postgres"
        },
        text("postgresURL", "SWITCHBOARD_POSTGRES_URL", "PostgreSQL connection string (postgresql://user:password@host:5432/db) for database postgres; the password is never logged", \.postgresURL) { text in
            !text.isEmpty ? nil : "must not be empty"
        },
        ConfigurationSetting(key: "logLevel", environment: "SWITCHBOARD_LOG_LEVEL", flag: "--log-level",
                             help: "debug, info, warning or error (default info)") { config, text in
            guard let level = LogLevel(rawValue: text.lowercased()) else { return "must be debug, info, warning or error" }
            config.logLevel = level
            return nil
        },
        integer("maxBodyBytes", "SWITCHBOARD_MAX_BODY_BYTES", 1...(256 << 20), "largest request body in bytes (default 1048576)") { $0.maxBodyBytes = $1 },
        integer("maxHeaderBytes", "SWITCHBOARD_MAX_HEADER_BYTES", 1024...(1 << 20), "largest request head in bytes (default 16384)") { $0.maxHeaderBytes = $1 },
        integer("headerTimeoutSeconds", "SWITCHBOARD_HEADER_TIMEOUT_SECONDS", 1...3600, "seconds to receive a request head (default 10)") { $0.headerTimeoutSeconds = $1 },
        integer("idleTimeoutSeconds", "SWITCHBOARD_IDLE_TIMEOUT_SECONDS", 1...86400, "seconds an idle keep-alive connection stays open (default 75)") { $0.idleTimeoutSeconds = $1 },
        integer("maxConnections", "SWITCHBOARD_MAX_CONNECTIONS", 1...1_000_000, "most open client connections (default 20000)") { $0.maxConnections = $1 },
        integer("maxConnectionsPerAddress", "SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS", 0...1_000_000, "most connections from one client address, trusted proxies exempt; behind them, most event streams and long polls per forwarded address; 0 for no cap (default 1000)") { $0.maxConnectionsPerAddress = $1 },
        integer("maxStreamsPerUser", "SWITCHBOARD_MAX_STREAMS_PER_USER", 0...100_000, "most event streams and long polls one user holds open on an instance; 0 for no cap (default 16)") { $0.maxStreamsPerUser = $1 },
        integer("bodyBufferBytes", "SWITCHBOARD_BODY_BUFFER_BYTES", 65_536...(1 << 34), "most bytes of request bodies still arriving, all connections together; one more body is answered 503 (default 67108864)") { $0.bodyBufferBytes = $1 },
        integer("loopThreads", "SWITCHBOARD_LOOP_THREADS", 0...256, "event-loop threads, 0 for one per core (default 0)") { $0.loopThreads = $1 },
        integer("shutdownGraceSeconds", "SWITCHBOARD_SHUTDOWN_GRACE_SECONDS", 0...600, "seconds in-flight requests get after SIGTERM (default 10)") { $0.shutdownGraceSeconds = $1 },
        integer("eventRetentionDays", "SWITCHBOARD_EVENT_RETENTION_DAYS", 1...3650, "days events are kept before pruning (default 30)") { $0.eventRetentionDays = $1 },
        integer("passwordScryptLogN", "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N", 15...20, "log2 of scrypt N for new password hashes, at least 15; weaker stored hashes are upgraded at the next login (default 17)") { $0.passwordScryptLogN = $1 },
        integer("passwordHashQueue", "SWITCHBOARD_PASSWORD_HASH_QUEUE", 1...10_000, "password checks, and separately new-password hashes, that may wait for the two scrypt threads; one more is answered 503 SERVER_BUSY; checks (logins) go first (default 64)") { $0.passwordHashQueue = $1 },
        text("gatewaySignatureV1", "SWITCHBOARD_GATEWAY_SIGNATURE_V1", "refuse (default) or accept: gateway requests signed version 1 (without the app and key ids), while app servers move to version 2", \.gatewaySignatureV1) { text in
            ["refuse", "accept"].contains(text) ? nil : "must be refuse or accept"
        },
        integer("sessionIdleDays", "SWITCHBOARD_SESSION_IDLE_DAYS", 1...3650, "days a session may go unused before it ends (default 30)") { $0.sessionIdleDays = $1 },
        integer("sessionMaxDays", "SWITCHBOARD_SESSION_MAX_DAYS", 1...3650, "days a session lives at most, however used (default 365)") { $0.sessionMaxDays = $1 },
        limit("limitRegistrationsPerAddress", "SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS", "accounts registered from one client address", \.registrationsPerAddress),
        limit("limitCallsPerCaller", "SWITCHBOARD_LIMIT_CALLS_PER_CALLER", "calls one user starts", \.callsPerCaller),
        limit("limitCallsPerCallee", "SWITCHBOARD_LIMIT_CALLS_PER_CALLEE", "calls one user starts to one callee or in one group", \.callsPerCallee),
        limit("limitRingsPerDevice", "SWITCHBOARD_LIMIT_RINGS_PER_DEVICE", "rings to one device, calls and gateway signals alike; the refusal cuts the device off for limitDeviceCutOffSeconds", \.ringsPerDevice),
        integer("limitDeviceCutOffSeconds", "SWITCHBOARD_LIMIT_DEVICE_CUT_OFF_SECONDS", 1...86_400, "seconds a device that reached limitRingsPerDevice gets no rings (default 600)") { $0.limits.ringsPerDevice.breakerMS = Int64($1) * 1000 },
        limit("limitGatewaySignalsPerCallee", "SWITCHBOARD_LIMIT_GATEWAY_SIGNALS_PER_CALLEE", "gateway signals that ring one callee of an app; more are dropped silently", \.gatewaySignalsPerCallee),
        limit("limitMessagesPerUser", "SWITCHBOARD_LIMIT_MESSAGES_PER_USER", "messages one user sends (plain and end-to-end encrypted)", \.messagesPerUser),
        limit("limitCallDirectoryChangesPerUser", "SWITCHBOARD_LIMIT_CALL_DIRECTORY_CHANGES_PER_USER", "Call Directory entries one user adds or removes", \.callDirectoryChangesPerUser),
        limit("limitLiveLocationUpdatesPerUser", "SWITCHBOARD_LIMIT_LIVE_LOCATION_UPDATES_PER_USER", "live-location starts and updates one user sends", \.liveLocationUpdatesPerUser),
        integer("relayMaxFramesPerSecond", "SWITCHBOARD_RELAY_MAX_FRAMES_PER_SECOND", 50...10_000, "audio frames one relay socket may send per second; more are dropped, and a socket that keeps flooding is closed with 4008 (default 100)") { $0.relayMaxFramesPerSecond = $1 },
        integer("ringTimeoutSeconds", "SWITCHBOARD_RING_TIMEOUT_SECONDS", 5...600, "seconds a call rings before it is missed (default 45)") { $0.ringTimeoutSeconds = $1 },
        integer("emptyRoomGraceSeconds", "SWITCHBOARD_EMPTY_ROOM_GRACE_SECONDS", 1...3600, "seconds an active call's room may stay empty (default 90)") { $0.emptyRoomGraceSeconds = $1 },
        integer("emptyRoomCheckSeconds", "SWITCHBOARD_EMPTY_ROOM_CHECK_SECONDS", 1...600, "seconds between empty-room checks (default 10)") { $0.emptyRoomCheckSeconds = $1 },
        text("mediaBackend", "SWITCHBOARD_MEDIA_BACKEND", "relay, livekit or none: the built-in audio relay (default), LiveKit rooms the server manages, or LiveKit rooms it does not (tokens are minted either way)", \.mediaBackend) { text in
            ["relay", "none", "livekit"].contains(text) ? nil : "must be relay, livekit or none"
        },
        text("livekitURL", "SWITCHBOARD_LIVEKIT_URL", "LiveKit URL for clients, ws:// or wss:// (default ws://127.0.0.1:7880)", \.livekitURL) { text in
            (text.hasPrefix("ws://") || text.hasPrefix("wss://")) && URL(string: text)?.host != nil ? nil : "must be a ws:// or wss:// URL"
        },
        text("livekitAPIKey", "SWITCHBOARD_LIVEKIT_API_KEY", "LiveKit API key (default devkey, the dev server's)", \.livekitAPIKey) { text in
            !text.isEmpty ? nil : "must not be empty"
        },
        text("livekitAPISecret", "SWITCHBOARD_LIVEKIT_API_SECRET", "LiveKit API secret (default secret, the dev server's); never logged", \.livekitAPISecret) { text in
            !text.isEmpty ? nil : "must not be empty"
        },
        integer("mediaDeadlineMilliseconds", "SWITCHBOARD_MEDIA_DEADLINE_MILLISECONDS", 100...60_000, "milliseconds a RoomService call may take (default 3000)") { $0.mediaDeadlineMilliseconds = $1 },
        text("apnsBundleID", "SWITCHBOARD_APNS_BUNDLE_ID", "the iOS app's bundle id; VoIP pushes use the topic <id>.voip (default com.example.switchboard)", \.apnsBundleID) { text in
            !text.isEmpty && !text.hasSuffix(".voip") ? nil : "must be the bundle id, without .voip"
        },
        text("apnsTeamID", "SWITCHBOARD_APNS_TEAM_ID", "APNs team id (10 characters), for token auth", \.apnsTeamID),
        text("apnsKeyID", "SWITCHBOARD_APNS_KEY_ID", "APNs key id (10 characters), for token auth", \.apnsKeyID),
        text("apnsKeyFile", "SWITCHBOARD_APNS_KEY_FILE", "the APNs .p8 key file; with team and key id enables APNs", \.apnsKeyFile),
        text("apnsCertificateFile", "SWITCHBOARD_APNS_CERTIFICATE_FILE", "APNs client certificate (PEM), instead of a .p8 key", \.apnsCertificateFile),
        text("apnsCertificateKeyFile", "SWITCHBOARD_APNS_CERTIFICATE_KEY_FILE", "the key of apnsCertificateFile (PEM)", \.apnsCertificateKeyFile),
        text("apnsProductionURL", "SWITCHBOARD_APNS_PRODUCTION_URL", "APNs production base URL (default https://api.push.apple.com; http:// = h2c, only to this machine, for emulators)", \.apnsProductionURL) { text in
            credentialURLProblem(text)
        },
        text("apnsSandboxURL", "SWITCHBOARD_APNS_SANDBOX_URL", "APNs sandbox base URL (default https://api.sandbox.push.apple.com; http:// only to this machine)", \.apnsSandboxURL) { text in
            credentialURLProblem(text)
        },
        text("apnsCAFile", "SWITCHBOARD_APNS_CA_FILE", "CA file to trust for APNs (an emulator's certificate)", \.apnsCAFile),
        integer("apnsConnections", "SWITCHBOARD_APNS_CONNECTIONS", 1...16, "HTTP/2 connections per APNs environment (default 1)") { $0.apnsConnections = $1 },
        integer("apnsRequestTimeoutSeconds", "SWITCHBOARD_APNS_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one APNs request may take before it is retried (default 10)") { $0.apnsRequestTimeoutSeconds = $1 },
        text("fcmServiceAccountFile", "SWITCHBOARD_FCM_SERVICE_ACCOUNT_FILE", "the Firebase service-account JSON; enables FCM (Android rings)", \.fcmServiceAccountFile),
        text("fcmURL", "SWITCHBOARD_FCM_URL", "FCM base URL (default https://fcm.googleapis.com; http:// = h2c, only to this machine, for emulators)", \.fcmURL) { text in
            credentialURLProblem(text)
        },
        text("fcmCAFile", "SWITCHBOARD_FCM_CA_FILE", "CA file to trust for FCM and its token endpoint (an emulator's certificate)", \.fcmCAFile),
        integer("fcmConnections", "SWITCHBOARD_FCM_CONNECTIONS", 1...16, "HTTP/2 connections to FCM (default 1)") { $0.fcmConnections = $1 },
        integer("fcmRequestTimeoutSeconds", "SWITCHBOARD_FCM_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one FCM request may take before it is retried (default 10)") { $0.fcmRequestTimeoutSeconds = $1 },
        text("huaweiAppID", "SWITCHBOARD_HUAWEI_APP_ID", "Huawei Push Kit app id (AppGallery Connect); with the secret enables the huawei channel", \.huaweiAppID) { text in
            text.isEmpty || (text.utf8.count <= 64 && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) ? nil : "must be the app id: letters and digits"
        },
        text("huaweiAppSecret", "SWITCHBOARD_HUAWEI_APP_SECRET", "Huawei Push Kit app secret (OAuth2 client secret); never logged", \.huaweiAppSecret),
        text("huaweiURL", "SWITCHBOARD_HUAWEI_URL", "Huawei push API base URL (default https://push-api.cloud.huawei.com; http:// = h2c)", \.huaweiURL) { text in
            credentialURLProblem(text)
        },
        text("huaweiTokenURL", "SWITCHBOARD_HUAWEI_TOKEN_URL", "Huawei OAuth2 token URL (default https://oauth-login.cloud.huawei.com/oauth2/v3/token)", \.huaweiTokenURL) { text in
            credentialURLProblem(text)
        },
        text("huaweiCAFile", "SWITCHBOARD_HUAWEI_CA_FILE", "CA file to trust for Huawei's endpoints (an emulator's certificate)", \.huaweiCAFile),
        integer("huaweiRequestTimeoutSeconds", "SWITCHBOARD_HUAWEI_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one Huawei request may take before it is retried (default 10)") { $0.huaweiRequestTimeoutSeconds = $1 },
        text("xiaomiAppSecret", "SWITCHBOARD_XIAOMI_APP_SECRET", "Xiaomi MiPush app secret; with xiaomiPackageName enables the xiaomi channel; never logged", \.xiaomiAppSecret),
        text("xiaomiPackageName", "SWITCHBOARD_XIAOMI_PACKAGE_NAME", "the Android app's package name registered with Xiaomi (restricted_package_name)", \.xiaomiPackageName) { text in
            text.isEmpty || androidName(text) ? nil : "must be a package name: letters, digits, '_' and '.'"
        },
        text("xiaomiChannelID", "SWITCHBOARD_XIAOMI_CHANNEL_ID", "the app's notification channel for calls, registered with Xiaomi (optional)", \.xiaomiChannelID),
        text("xiaomiRegion", "SWITCHBOARD_XIAOMI_REGION", "Xiaomi host: cn (default), sgp, fr, ru or idmb", \.xiaomiRegion) { text in
            XiaomiMessage.regionHosts[text] != nil ? nil : "must be one of \(XiaomiMessage.regionHosts.keys.sorted().joined(separator: ", "))"
        },
        text("xiaomiURL", "SWITCHBOARD_XIAOMI_URL", "Xiaomi API base URL instead of the region's (an emulator; http:// = h2c)", \.xiaomiURL) { text in
            text.isEmpty ? nil : credentialURLProblem(text)
        },
        text("xiaomiCAFile", "SWITCHBOARD_XIAOMI_CA_FILE", "CA file to trust for Xiaomi (an emulator's certificate)", \.xiaomiCAFile),
        integer("xiaomiRequestTimeoutSeconds", "SWITCHBOARD_XIAOMI_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one Xiaomi request may take before it is retried (default 10)") { $0.xiaomiRequestTimeoutSeconds = $1 },
        integer("xiaomiConnections", "SWITCHBOARD_XIAOMI_CONNECTIONS", 1...32, "connections to Xiaomi (default 4; it may answer over HTTP/1.1, one request per connection)") { $0.xiaomiConnections = $1 },
        text("oppoAppKey", "SWITCHBOARD_OPPO_APP_KEY", "OPPO push app key; with the master secret and channel id enables the oppo channel", \.oppoAppKey),
        text("oppoMasterSecret", "SWITCHBOARD_OPPO_MASTER_SECRET", "OPPO push master secret (signs the auth request); never logged", \.oppoMasterSecret),
        text("oppoChannelID", "SWITCHBOARD_OPPO_CHANNEL_ID", "the app's notification channel for calls, registered with OPPO (required by OPPO)", \.oppoChannelID),
        text("oppoURL", "SWITCHBOARD_OPPO_URL", "OPPO API base URL (default https://api.push.oppomobile.com; overseas https://api-intl.push.oppomobile.com)", \.oppoURL) { text in
            credentialURLProblem(text)
        },
        text("oppoCAFile", "SWITCHBOARD_OPPO_CA_FILE", "CA file to trust for OPPO (an emulator's certificate)", \.oppoCAFile),
        integer("oppoRequestTimeoutSeconds", "SWITCHBOARD_OPPO_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one OPPO request may take before it is retried (default 10)") { $0.oppoRequestTimeoutSeconds = $1 },
        integer("oppoConnections", "SWITCHBOARD_OPPO_CONNECTIONS", 1...32, "connections to OPPO (default 4; it may answer over HTTP/1.1, one request per connection)") { $0.oppoConnections = $1 },
        text("vivoAppID", "SWITCHBOARD_VIVO_APP_ID", "vivo push app id; with the app key and secret enables the vivo channel", \.vivoAppID) { text in
            text.isEmpty || (text.utf8.count <= 64 && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) ? nil : "must be the app id: letters and digits"
        },
        text("vivoAppKey", "SWITCHBOARD_VIVO_APP_KEY", "vivo push app key", \.vivoAppKey),
        text("vivoAppSecret", "SWITCHBOARD_VIVO_APP_SECRET", "vivo push app secret (signs the auth request); never logged", \.vivoAppSecret),
        text("vivoURL", "SWITCHBOARD_VIVO_URL", "vivo API base URL (default https://api-push.vivo.com.cn; http:// = h2c)", \.vivoURL) { text in
            credentialURLProblem(text)
        },
        text("vivoCAFile", "SWITCHBOARD_VIVO_CA_FILE", "CA file to trust for vivo (an emulator's certificate)", \.vivoCAFile),
        integer("vivoRequestTimeoutSeconds", "SWITCHBOARD_VIVO_REQUEST_TIMEOUT_SECONDS", 1...60, "seconds one vivo request may take before it is retried (default 10)") { $0.vivoRequestTimeoutSeconds = $1 },
        integer("vivoConnections", "SWITCHBOARD_VIVO_CONNECTIONS", 1...32, "connections to vivo (default 4; it may answer over HTTP/1.1, one request per connection)") { $0.vivoConnections = $1 },
        text("cityDatabaseFile", "SWITCHBOARD_CITY_DATABASE_FILE", "a MaxMind-format city database (.mmdb) for GET /location/city; empty answers null (default empty)", \.cityDatabaseFile),
        ConfigurationSetting(
            key: "trustedProxies", environment: "SWITCHBOARD_TRUSTED_PROXIES", flag: nil,
            help: "comma-separated proxy addresses whose X-Forwarded-For names the client, for the per-address limits and the city lookup (default none; 127.0.0.1 behind nginx on this machine)"
        ) { config, text in
            let addresses = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard addresses.allSatisfy({ SocketAddress.parse("[\($0)]:1") != nil || SocketAddress.parse("\($0):1") != nil }) else {
                return "must be comma-separated IP addresses"
            }
            config.trustedProxies = Set(addresses)
            return nil
        },
        text("adminKey", "SWITCHBOARD_ADMIN_KEY", "key for /admin/* (Authorization: Bearer <key>); empty disables them (default empty); never logged", \.adminKey) { text in
            text.isEmpty || text.utf8.count >= 16 ? nil : "must be at least 16 characters"
        },
        text("dataEncryptionKey", "SWITCHBOARD_DATA_ENCRYPTION_KEY",
             "32 random bytes as base64 (openssl rand -base64 32): encrypts what the database keeps secret (devices' VoIP payload keys, gateway apps' push credentials); empty refuses both (default empty); never logged",
             \.dataEncryptionKey) { text in
            text.isEmpty || Data(base64Encoded: text)?.count == 32 ? nil : "must be 32 bytes as base64 (openssl rand -base64 32)"
        },
        integer("eventHeartbeatSeconds", "SWITCHBOARD_EVENT_HEARTBEAT_SECONDS", 1...300, "seconds between heartbeats on an idle event stream (default 15)") { $0.eventHeartbeatSeconds = $1 },
    ]

    /// What is wrong with the URL of a service that gets a secret or an auth token in its
    /// requests: `https://`, or `http://` (h2c) only to this machine (an emulator).
    static func credentialURLProblem(_ text: String) -> String? {
        if text.hasPrefix("https://") { return nil }
        guard text.hasPrefix("http://") else { return "must be an http(s):// URL" }
        let host = URLComponents(string: text)?.host ?? ""
        return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
            ? nil : "may be http:// only on this machine (127.0.0.1, localhost): its requests carry the secret; use https://"
    }

    /// An Android package name: dot-separated parts of letters, digits and `_`.
    private static func androidName(_ text: String) -> Bool {
        text.utf8.count <= 255 && text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
        }
    }

    /// A string setting; `check` returns a problem description, or nil when the text is fine.
    private static func text(
        _ key: String, _ environment: String, _ help: String, _ field: WritableKeyPath<ServerConfiguration, String> & Sendable,
        check: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> ConfigurationSetting {
        ConfigurationSetting(key: key, environment: environment, flag: nil, help: help) { config, text in
            if let problem = check(text) { return problem }
            config[keyPath: field] = text
            return nil
        }
    }

    /// A limit of the one limiter as `COUNT/SECONDS`.
    private static func limit(
        _ key: String, _ environment: String, _ what: String, _ field: WritableKeyPath<ServerLimits, RateLimit> & Sendable
    ) -> ConfigurationSetting {
        let fallback = ServerLimits()[keyPath: field]
        return ConfigurationSetting(
            key: key, environment: environment, flag: nil, help: "\(what), as COUNT/SECONDS (default \(ServerLimits.text(fallback)))"
        ) { config, text in
            guard let parsed = ServerLimits.parse(text) else {
                return "must be COUNT/SECONDS, like \(ServerLimits.text(fallback)): 1 to 1000000 per 1 to 86400 seconds"
            }
            config.limits[keyPath: field].count = parsed.count
            config.limits[keyPath: field].windowMS = parsed.windowMS
            return nil
        }
    }

    private static func integer(
        _ key: String, _ environment: String, _ range: ClosedRange<Int>, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, Int) -> Void
    ) -> ConfigurationSetting {
        ConfigurationSetting(key: key, environment: environment, flag: nil, help: help, kind: .integer) { config, text in
            guard let value = Int(text), range.contains(value) else {
                return "must be an integer from \(range.lowerBound) to \(range.upperBound)"
            }
            set(&config, value)
            return nil
        }
    }
}

extension ConfigurationSetting {
    /// Sets this setting in `configuration` from its text; the problem, if the text is refused.
    func set(_ text: String, in configuration: inout ServerConfiguration) -> String? { apply(&configuration, text) }
}
