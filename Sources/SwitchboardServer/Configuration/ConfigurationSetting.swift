import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardPOSIX
import SwitchboardPushCore

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

    init(
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
    public static let all: [ConfigurationSetting] =
        [
            ConfigurationSetting(
                key: "listen", environment: "SWITCHBOARD_LISTEN", flag: "--listen",
                help: "HOST:PORT to listen on; port 0 picks a free port (default 127.0.0.1:8080)"
            ) { config, text in
                guard let address = SocketAddress.parse(text) else { return "must be HOST:PORT, like 127.0.0.1:8080" }
                config.http.listen = address
                return nil
            },
            ConfigurationSetting(
                key: "operatorListen", environment: "SWITCHBOARD_OPERATOR_LISTEN", flag: "--operator-listen",
                help:
                    "HOST:PORT of a second listener that alone serves /metrics, /admin/* and the console /console/ (and /healthz, /readyz, /sdk/); empty keeps them on listen (default empty)"
            ) { config, text in
                if text.isEmpty {
                    config.http.operatorListen = nil
                    return nil
                }
                guard let address = SocketAddress.parse(text) else {
                    return "must be HOST:PORT, like 127.0.0.1:9090, or empty"
                }
                config.http.operatorListen = address
                return nil
            },
            ConfigurationSetting(
                key: "dataDir", environment: "SWITCHBOARD_DATA_DIR", flag: "--data-dir",
                help: "directory for the SQLite database (default ./var)"
            ) { config, text in
                guard !text.isEmpty else { return "must not be empty" }
                config.store.dataDirectory = text
                return nil
            },
            choice(
                "database", "SWITCHBOARD_DATABASE",
                "sqlite (embedded, in dataDir) or postgres (at postgresURL, shared by several instances) (default sqlite)",
                \.store.engine),
            text(
                "postgresURL", "SWITCHBOARD_POSTGRES_URL",
                "PostgreSQL connection string (postgresql://user:password@host:5432/db) for database postgres; the password is never logged",
                \.store.postgresURL
            ) { text in
                !text.isEmpty ? nil : "must not be empty"
            },
            ConfigurationSetting(
                key: "logLevel", environment: "SWITCHBOARD_LOG_LEVEL", flag: "--log-level",
                help: "debug, info, warning or error (default info)"
            ) { config, text in
                guard let level = LogLevel(rawValue: text.lowercased()) else {
                    return "must be debug, info, warning or error"
                }
                config.logLevel = level
                return nil
            },
            integer(
                "maxBodyBytes", "SWITCHBOARD_MAX_BODY_BYTES", 1...(256 << 20),
                "largest request body in bytes (default 1048576)"
            ) { $0.http.maxBodyBytes = $1 },
            integer(
                "maxHeaderBytes", "SWITCHBOARD_MAX_HEADER_BYTES", 1024...(1 << 20),
                "largest request head in bytes (default 16384)"
            ) { $0.http.maxHeaderBytes = $1 },
            integer(
                "headerTimeoutSeconds", "SWITCHBOARD_HEADER_TIMEOUT_SECONDS", 1...3600,
                "seconds to receive a request head (default 10)"
            ) { $0.http.headerTimeoutSeconds = $1 },
            integer(
                "idleTimeoutSeconds", "SWITCHBOARD_IDLE_TIMEOUT_SECONDS", 1...86400,
                "seconds an idle keep-alive connection stays open (default 75)"
            ) { $0.http.idleTimeoutSeconds = $1 },
            integer(
                "maxConnections", "SWITCHBOARD_MAX_CONNECTIONS", 1...1_000_000,
                "most open client connections (default 20000)"
            ) { $0.http.maxConnections = $1 },
            integer(
                "maxConnectionsPerAddress", "SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS", 0...1_000_000,
                "most connections from one client address, trusted proxies exempt; behind them, most event streams and long polls per forwarded address; 0 for no cap (default 1000)"
            ) { $0.http.maxConnectionsPerAddress = $1 },
            integer(
                "maxStreamsPerUser", "SWITCHBOARD_MAX_STREAMS_PER_USER", 0...100_000,
                "most event streams and long polls one user holds open on an instance; 0 for no cap (default 16)"
            ) { $0.http.maxStreamsPerUser = $1 },
            integer(
                "bodyBufferBytes", "SWITCHBOARD_BODY_BUFFER_BYTES", 65_536...(1 << 34),
                "most bytes of request bodies still arriving, all connections together; one more body is answered 503 (default 67108864)"
            ) { $0.http.bodyBufferBytes = $1 },
            integer(
                "loopThreads", "SWITCHBOARD_LOOP_THREADS", 0...256, "event-loop threads, 0 for one per core (default 0)"
            ) { $0.http.loopThreads = $1 },
            integer(
                "shutdownGraceSeconds", "SWITCHBOARD_SHUTDOWN_GRACE_SECONDS", 0...600,
                "seconds in-flight requests get after SIGTERM (default 10)"
            ) { $0.http.shutdownGraceSeconds = $1 },
            integer(
                "eventRetentionDays", "SWITCHBOARD_EVENT_RETENTION_DAYS", 1...3650,
                "days events are kept before pruning (default 30)"
            ) { $0.events.retentionDays = $1 },
            integer(
                "passwordScryptLogN", "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N", 15...20,
                "log2 of scrypt N for new password hashes, at least 15; weaker stored hashes are upgraded at the next login (default 17)"
            ) { $0.accounts.passwordScryptLogN = $1 },
            integer(
                "passwordHashQueue", "SWITCHBOARD_PASSWORD_HASH_QUEUE", 1...10_000,
                "password checks, and separately new-password hashes, that may wait for the two scrypt threads; one more is answered 503 SERVER_BUSY; checks (logins) go first (default 64)"
            ) { $0.accounts.passwordHashQueue = $1 },
            choice(
                "gatewaySignatureV1", "SWITCHBOARD_GATEWAY_SIGNATURE_V1",
                "refuse (default) or accept: gateway requests signed version 1 (without the app and key ids), while app servers move to version 2",
                \.gateway.signatureV1),
            integer(
                "sessionIdleDays", "SWITCHBOARD_SESSION_IDLE_DAYS", 1...3650,
                "days a session may go unused before it ends (default 30)"
            ) { $0.accounts.sessionIdleDays = $1 },
            integer(
                "sessionMaxDays", "SWITCHBOARD_SESSION_MAX_DAYS", 1...3650,
                "days a session lives at most, however used (default 365)"
            ) { $0.accounts.sessionMaxDays = $1 },
            limit(
                "limitRegistrationsPerAddress", "SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS",
                "accounts registered from one client address", \.registrationsPerAddress),
            limit(
                "limitCallsPerCaller", "SWITCHBOARD_LIMIT_CALLS_PER_CALLER", "calls one user starts", \.callsPerCaller),
            limit(
                "limitCallsPerCallee", "SWITCHBOARD_LIMIT_CALLS_PER_CALLEE",
                "calls one user starts to one callee or in one group", \.callsPerCallee),
            limit(
                "limitRingsPerDevice", "SWITCHBOARD_LIMIT_RINGS_PER_DEVICE",
                "rings to one device, calls and gateway signals alike; the refusal cuts the device off for limitDeviceCutOffSeconds",
                \.ringsPerDevice),
            integer(
                "limitDeviceCutOffSeconds", "SWITCHBOARD_LIMIT_DEVICE_CUT_OFF_SECONDS", 1...86_400,
                "seconds a device that reached limitRingsPerDevice gets no rings (default 600)"
            ) { $0.limits.ringsPerDevice.breakerMS = Int64($1) * 1000 },
            limit(
                "limitGatewaySignalsPerCallee", "SWITCHBOARD_LIMIT_GATEWAY_SIGNALS_PER_CALLEE",
                "gateway signals that ring one callee of an app; more are dropped silently", \.gatewaySignalsPerCallee),
            limit(
                "limitMessagesPerUser", "SWITCHBOARD_LIMIT_MESSAGES_PER_USER",
                "messages one user sends (plain and end-to-end encrypted)", \.messagesPerUser),
            limit(
                "limitCallDirectoryChangesPerUser", "SWITCHBOARD_LIMIT_CALL_DIRECTORY_CHANGES_PER_USER",
                "Call Directory entries one user adds or removes", \.callDirectoryChangesPerUser),
            limit(
                "limitLiveLocationUpdatesPerUser", "SWITCHBOARD_LIMIT_LIVE_LOCATION_UPDATES_PER_USER",
                "live-location starts and updates one user sends", \.liveLocationUpdatesPerUser),
            integer(
                "relayMaxFramesPerSecond", "SWITCHBOARD_RELAY_MAX_FRAMES_PER_SECOND", 50...1_000_000,
                "audio frames one relay socket may send per second; more are dropped, and a socket that keeps flooding is closed with 4008 (default 100)"
            ) { $0.media.relayMaxFramesPerSecond = $1 },
            integer(
                "ringTimeoutSeconds", "SWITCHBOARD_RING_TIMEOUT_SECONDS", 5...600,
                "seconds a call rings before it is missed (default 45)"
            ) { $0.calls.ringTimeoutSeconds = $1 },
            choice(
                "callMessages", "SWITCHBOARD_CALL_MESSAGES",
                "on or off: an ended call leaves a message of kind call in its conversation or group (default on)",
                \.calls.messages),
            integer(
                "webhookTimeoutSeconds", "SWITCHBOARD_WEBHOOK_TIMEOUT_SECONDS", 1...60,
                "seconds one webhook delivery request may take (default 10)"
            ) { $0.webhooks.timeoutSeconds = $1 },
            integer(
                "webhookRetryMaxSeconds", "SWITCHBOARD_WEBHOOK_RETRY_MAX_SECONDS", 1...86_400,
                "the longest pause between attempts at a webhook delivery; the back-off doubles up to it (default 3600)"
            ) { $0.webhooks.retryMaxSeconds = $1 },
            integer(
                "webhookGiveUpHours", "SWITCHBOARD_WEBHOOK_GIVE_UP_HOURS", 1...720,
                "hours a webhook delivery is retried before it is dead-lettered (default 72)"
            ) { $0.webhooks.giveUpHours = $1 },
            integer(
                "emptyRoomGraceSeconds", "SWITCHBOARD_EMPTY_ROOM_GRACE_SECONDS", 1...3600,
                "seconds an active call's room may stay empty (default 90)"
            ) { $0.calls.emptyRoomGraceSeconds = $1 },
            integer(
                "emptyRoomCheckSeconds", "SWITCHBOARD_EMPTY_ROOM_CHECK_SECONDS", 1...600,
                "seconds between empty-room checks (default 10)"
            ) { $0.calls.emptyRoomCheckSeconds = $1 },
            choice(
                "mediaBackend", "SWITCHBOARD_MEDIA_BACKEND",
                "relay, livekit or none: the built-in audio relay (default), LiveKit rooms the server manages, or LiveKit rooms it does not (tokens are minted either way)",
                \.media.backend),
            text(
                "livekitURL", "SWITCHBOARD_LIVEKIT_URL",
                "LiveKit URL for clients, ws:// or wss:// (default ws://127.0.0.1:7880)", \.media.livekit.url
            ) { text in
                (text.hasPrefix("ws://") || text.hasPrefix("wss://")) && URL(string: text)?.host != nil
                    ? nil : "must be a ws:// or wss:// URL"
            },
            text(
                "livekitAPIKey", "SWITCHBOARD_LIVEKIT_API_KEY", "LiveKit API key (default devkey, the dev server's)",
                \.media.livekit.apiKey
            ) { text in
                !text.isEmpty ? nil : "must not be empty"
            },
            text(
                "livekitAPISecret", "SWITCHBOARD_LIVEKIT_API_SECRET",
                "LiveKit API secret (default secret, the dev server's); never logged", \.media.livekit.apiSecret
            ) { text in
                !text.isEmpty ? nil : "must not be empty"
            },
            integer(
                "mediaDeadlineMilliseconds", "SWITCHBOARD_MEDIA_DEADLINE_MILLISECONDS", 100...60_000,
                "milliseconds a RoomService call may take (default 3000)"
            ) { $0.media.livekit.deadlineMilliseconds = $1 },
            text(
                "apnsBundleID", "SWITCHBOARD_APNS_BUNDLE_ID",
                "the iOS app's bundle id; VoIP pushes use the topic <id>.voip (default com.example.switchboard)",
                \.push.apns.bundleID
            ) { text in
                !text.isEmpty && !text.hasSuffix(".voip") ? nil : "must be the bundle id, without .voip"
            },
            integer(
                "pushTokenMaxAgeDays", "SWITCHBOARD_PUSH_TOKEN_MAX_AGE_DAYS", 1...3650,
                "days a push token may go without its app registering it again before it is removed (default 270)"
            ) { $0.push.tokenMaxAgeDays = $1 },
            choice(
                "apnsAlertText", "SWITCHBOARD_APNS_ALERT_TEXT",
                "who words iPhone alerts: server (in the device's language; default) or app (also loc-keys SWITCHBOARD_MISSED_CALL and SWITCHBOARD_MISSED_CALL_FROM for the app's Localizable.strings)",
                \.push.apns.alertText),
            text(
                "apnsTeamID", "SWITCHBOARD_APNS_TEAM_ID", "APNs team id (10 characters), for token auth",
                \.push.apns.teamID),
            text(
                "apnsKeyID", "SWITCHBOARD_APNS_KEY_ID", "APNs key id (10 characters), for token auth", \.push.apns.keyID
            ),
            text(
                "apnsKeyFile", "SWITCHBOARD_APNS_KEY_FILE", "the APNs .p8 key file; with team and key id enables APNs",
                \.push.apns.keyFile),
            text(
                "apnsCertificateFile", "SWITCHBOARD_APNS_CERTIFICATE_FILE",
                "APNs client certificate (PEM), instead of a .p8 key", \.push.apns.certificateFile),
            text(
                "apnsCertificateKeyFile", "SWITCHBOARD_APNS_CERTIFICATE_KEY_FILE",
                "the key of apnsCertificateFile (PEM)", \.push.apns.certificateKeyFile),
            serviceURL(
                "apnsProductionURL", "SWITCHBOARD_APNS_PRODUCTION_URL",
                "APNs production base URL (default https://api.push.apple.com; http:// = h2c, only to this machine, for emulators)",
                \.push.apns.connection.url),
            serviceURL(
                "apnsSandboxURL", "SWITCHBOARD_APNS_SANDBOX_URL",
                "APNs sandbox base URL (default https://api.sandbox.push.apple.com; http:// only to this machine)",
                \.push.apns.sandboxURL),
        ]
        + connection(
            "apns", "APNs", \.push.apns.connection, trusting: "APNs (an emulator's certificate)",
            connections: (1...16, "HTTP/2 connections per APNs environment (default 1)")) + [
            text(
                "fcmServiceAccountFile", "SWITCHBOARD_FCM_SERVICE_ACCOUNT_FILE",
                "the Firebase service-account JSON; enables FCM (Android rings)", \.push.fcm.serviceAccountFile),
            serviceURL(
                "fcmURL", "SWITCHBOARD_FCM_URL",
                "FCM base URL (default https://fcm.googleapis.com; http:// = h2c, only to this machine, for emulators)",
                \.push.fcm.connection.url),
        ]
        + connection(
            "fcm", "FCM", \.push.fcm.connection, trusting: "FCM and its token endpoint (an emulator's certificate)",
            connections: (1...16, "HTTP/2 connections to FCM (default 1)")) + [
            text(
                "huaweiAppID", "SWITCHBOARD_HUAWEI_APP_ID",
                "Huawei Push Kit app id (AppGallery Connect); with the secret enables the huawei channel",
                \.push.huawei.appID
            ) { text in
                appIDProblem(text)
            },
            text(
                "huaweiAppSecret", "SWITCHBOARD_HUAWEI_APP_SECRET",
                "Huawei Push Kit app secret (OAuth2 client secret); never logged", \.push.huawei.appSecret),
            serviceURL(
                "huaweiURL", "SWITCHBOARD_HUAWEI_URL",
                "Huawei push API base URL (default https://push-api.cloud.huawei.com; http:// = h2c)",
                \.push.huawei.connection.url),
            serviceURL(
                "huaweiTokenURL", "SWITCHBOARD_HUAWEI_TOKEN_URL",
                "Huawei OAuth2 token URL (default https://oauth-login.cloud.huawei.com/oauth2/v3/token)",
                \.push.huawei.tokenURL),
        ]
        + connection(
            "huawei", "Huawei", \.push.huawei.connection, trusting: "Huawei's endpoints (an emulator's certificate)",
            connections: nil) + [
            text(
                "xiaomiAppSecret", "SWITCHBOARD_XIAOMI_APP_SECRET",
                "Xiaomi MiPush app secret; with xiaomiPackageName enables the xiaomi channel; never logged",
                \.push.xiaomi.appSecret),
            text(
                "xiaomiPackageName", "SWITCHBOARD_XIAOMI_PACKAGE_NAME",
                "the Android app's package name registered with Xiaomi (restricted_package_name)",
                \.push.xiaomi.packageName
            ) { text in
                text.isEmpty || androidName(text) ? nil : "must be a package name: letters, digits, '_' and '.'"
            },
            text(
                "xiaomiChannelID", "SWITCHBOARD_XIAOMI_CHANNEL_ID",
                "the app's notification channel for calls, registered with Xiaomi (optional)", \.push.xiaomi.channelID),
            text(
                "xiaomiRegion", "SWITCHBOARD_XIAOMI_REGION", "Xiaomi host: cn (default), sgp, fr, ru or idmb",
                \.push.xiaomi.region
            ) { text in
                XiaomiMessage.regionHosts[text] != nil
                    ? nil : "must be one of \(XiaomiMessage.regionHosts.keys.sorted().joined(separator: ", "))"
            },
            text(
                "xiaomiURL", "SWITCHBOARD_XIAOMI_URL",
                "Xiaomi API base URL instead of the region's (an emulator; http:// = h2c)", \.push.xiaomi.connection.url
            ) { text in
                text.isEmpty ? nil : credentialURLProblem(text)
            },
        ]
        + connection(
            "xiaomi", "Xiaomi", \.push.xiaomi.connection, trusting: "Xiaomi (an emulator's certificate)",
            connections: makersConnections("Xiaomi")) + [
            text(
                "oppoAppKey", "SWITCHBOARD_OPPO_APP_KEY",
                "OPPO push app key; with the master secret and channel id enables the oppo channel", \.push.oppo.appKey),
            text(
                "oppoMasterSecret", "SWITCHBOARD_OPPO_MASTER_SECRET",
                "OPPO push master secret (signs the auth request); never logged", \.push.oppo.masterSecret),
            text(
                "oppoChannelID", "SWITCHBOARD_OPPO_CHANNEL_ID",
                "the app's notification channel for calls, registered with OPPO (required by OPPO)",
                \.push.oppo.channelID),
            serviceURL(
                "oppoURL", "SWITCHBOARD_OPPO_URL",
                "OPPO API base URL (default https://api.push.oppomobile.com; overseas https://api-intl.push.oppomobile.com)",
                \.push.oppo.connection.url),
        ]
        + connection(
            "oppo", "OPPO", \.push.oppo.connection, trusting: "OPPO (an emulator's certificate)",
            connections: makersConnections("OPPO")) + [
            text(
                "vivoAppID", "SWITCHBOARD_VIVO_APP_ID",
                "vivo push app id; with the app key and secret enables the vivo channel", \.push.vivo.appID
            ) { text in
                appIDProblem(text)
            },
            text("vivoAppKey", "SWITCHBOARD_VIVO_APP_KEY", "vivo push app key", \.push.vivo.appKey),
            text(
                "vivoAppSecret", "SWITCHBOARD_VIVO_APP_SECRET",
                "vivo push app secret (signs the auth request); never logged", \.push.vivo.appSecret),
            serviceURL(
                "vivoURL", "SWITCHBOARD_VIVO_URL",
                "vivo API base URL (default https://api-push.vivo.com.cn; http:// = h2c)", \.push.vivo.connection.url),
        ]
        + connection(
            "vivo", "vivo", \.push.vivo.connection, trusting: "vivo (an emulator's certificate)",
            connections: makersConnections("vivo")) + [
            text(
                "cityDatabaseFile", "SWITCHBOARD_CITY_DATABASE_FILE",
                "a MaxMind-format city database (.mmdb) for GET /location/city; empty answers null (default empty)",
                \.cityDatabaseFile),
            ConfigurationSetting(
                key: "trustedProxies", environment: "SWITCHBOARD_TRUSTED_PROXIES", flag: nil,
                help:
                    "comma-separated proxy addresses whose X-Forwarded-For names the client, for the per-address limits and the city lookup (default none; 127.0.0.1 behind nginx on this machine)"
            ) { config, text in
                let addresses = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                    !$0.isEmpty
                }
                guard
                    addresses.allSatisfy({
                        SocketAddress.parse("[\($0)]:1") != nil || SocketAddress.parse("\($0):1") != nil
                    })
                else {
                    return "must be comma-separated IP addresses"
                }
                config.http.trustedProxies = Set(addresses)
                return nil
            },
            text(
                "adminKey", "SWITCHBOARD_ADMIN_KEY",
                "key for /admin/* (Authorization: Bearer <key>); empty disables them (default empty); never logged",
                \.adminKey
            ) { text in
                text.isEmpty || text.utf8.count >= 16 ? nil : "must be at least 16 characters"
            },
            text(
                "dataEncryptionKey", "SWITCHBOARD_DATA_ENCRYPTION_KEY",
                "32 random bytes as base64 (openssl rand -base64 32): encrypts what the database keeps secret (devices' VoIP payload keys, gateway apps' push credentials); empty refuses both (default empty); never logged",
                \.dataEncryptionKey
            ) { text in
                text.isEmpty || Data(base64Encoded: text)?.count == 32
                    ? nil : "must be 32 bytes as base64 (openssl rand -base64 32)"
            },
            integer(
                "eventHeartbeatSeconds", "SWITCHBOARD_EVENT_HEARTBEAT_SECONDS", 1...300,
                "seconds between heartbeats on an idle event stream (default 15)"
            ) { $0.events.heartbeatSeconds = $1 },
        ]
}

extension ConfigurationSetting {
    /// Sets this setting in `configuration` from its text; the problem, if the text is refused.
    func set(_ text: String, in configuration: inout ServerConfiguration) -> String? { apply(&configuration, text) }
}
