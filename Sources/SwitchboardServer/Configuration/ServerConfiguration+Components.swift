import Foundation
import SwitchboardPOSIX
import SwitchboardPushCore

// The components of ``ServerConfiguration``: one value per part of the server, each read by
// that part alone. The file keys and environment variables are the flat names of
// `ConfigurationSetting.all` (`maxBodyBytes`, `SWITCHBOARD_APNS_KEY_FILE`, …), unchanged.

/// The HTTP listener and what one client may cost it.
public struct HTTPSettings: Sendable, Equatable {
    /// `HOST:PORT` to listen on; port 0 picks a free port.
    public var listen = SocketAddress(host: "127.0.0.1", port: 8080)
    /// When set, a second listener that alone serves `/metrics` and `/admin/*` (plus the
    /// health checks), so they can stay on a private address; `listen` then answers 404 there.
    public var operatorListen: SocketAddress?
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
    /// The proxies (addresses) whose `X-Forwarded-For` names the client, for the per-address
    /// limits (logins, registrations) and the city lookup; the rest are taken at their word as
    /// the peer. None by default: behind a proxy, name it (`127.0.0.1` for nginx on this machine).
    public var trustedProxies: Set<String> = []

    public init() {}
}

/// Which store holds the data, and where.
public struct StoreSettings: Sendable, Equatable {
    /// The store's engine, as the `database` setting names it.
    public enum Engine: String, Sendable, Equatable, CaseIterable {
        /// Embedded, in `dataDirectory`; one instance.
        case sqlite
        /// At `postgresURL`, shared by every instance that names it.
        case postgres
    }

    /// The store the settings choose, with what it needs.
    public enum Choice: Sendable, Equatable {
        case sqlite(directory: String)
        case postgres(url: String)
    }

    public var engine = Engine.sqlite
    /// Where the SQLite database lives.
    public var dataDirectory = "./var"
    /// The PostgreSQL connection string (`postgresql://user:password@host:5432/db`, or
    /// `key=value` pairs) when `engine` is `postgres`; its password is never logged.
    public var postgresURL = ""

    /// The store to open.
    public var choice: Choice {
        switch engine {
        case .sqlite: .sqlite(directory: dataDirectory)
        case .postgres: .postgres(url: postgresURL)
        }
    }

    public init() {}
}

/// How the calls' media is carried.
public struct MediaSettings: Sendable, Equatable {
    /// The media backend, as the `mediaBackend` setting names it.
    public enum Backend: String, Sendable, Equatable, CaseIterable {
        /// The built-in audio relay carries the calls' audio over `GET /calls/{id}/audio`.
        case relay
        /// LiveKit rooms the server manages: it closes rooms and removes participants over
        /// RoomService, and runs the watchdog.
        case livekit
        /// LiveKit rooms the server does not manage (LiveKit tokens are still minted).
        case none
    }

    public var backend = Backend.relay
    public var livekit = LiveKitSettings()
    /// Audio frames a relay socket may send per second, about twice real time (50 frames of
    /// 20 ms); more are dropped and counted, and a socket that keeps flooding is closed (4008).
    public var relayMaxFramesPerSecond = 100

    public init() {}
}

/// Where LiveKit is and the keys its tokens and webhooks are signed with.
public struct LiveKitSettings: Sendable, Equatable {
    /// The URL clients connect to; the API URL is derived from it (ws → http, wss → https).
    public var url = "ws://127.0.0.1:7880"
    /// The API key (the dev server's default).
    public var apiKey = "devkey"
    /// The API secret (the dev server's default).
    public var apiSecret = "secret"
    /// Milliseconds a RoomService call may take before the transition fails with 503.
    public var deadlineMilliseconds = 3000

    public init() {}
}

/// A push service's connection: where it is, what to trust, how long a request may take and
/// how many connections to keep. Every channel has one.
public struct PushServiceConnection: Sendable, Equatable {
    /// The base URL (an emulator's for local runs; `http://` means h2c with prior knowledge).
    public var url: String
    /// A CA file to trust instead of the system's (an emulator's certificate); empty: the system's.
    public var caFile = ""
    /// The deadline of one request; past it the attempt counts as a transport failure and is
    /// retried. A slow request holds back only its own job, never another token's.
    public var requestTimeoutSeconds = 10
    /// Long-lived connections to the service.
    public var connections: Int

    public init(url: String, connections: Int) {
        self.url = url
        self.connections = connections
    }

    /// The CA file, nil for the system's.
    var caFileOrNil: String? { caFile.isEmpty ? nil : caFile }
}

/// APNs (iOS rings): the app's topic, the provider credentials and the two environments.
public struct APNsSettings: Sendable, Equatable {
    /// The iOS app's bundle id; VoIP pushes go to the topic `<bundle id>.voip`.
    public var bundleID = "com.example.switchboard"
    /// Provider-token auth: the 10-character team id, key id, and the `.p8` key file.
    public var teamID = ""
    public var keyID = ""
    public var keyFile = ""
    /// Certificate auth instead: the client certificate and its key (PEM files).
    public var certificateFile = ""
    public var certificateKeyFile = ""
    /// The production environment (`connection.url`), its CA file, deadline and connections
    /// per environment.
    public var connection = PushServiceConnection(url: "https://api.push.apple.com", connections: 1)
    /// The sandbox environment's base URL.
    public var sandboxURL = "https://api.sandbox.push.apple.com"
    /// Who words an iPhone's alerts (a missed call).
    public var alertText = AlertText.server

    /// Who words an iPhone's alerts.
    public enum AlertText: String, Sendable, Equatable, CaseIterable {
        /// The server, in the device's language (its registered locale).
        case server
        /// The app: alerts also carry `title-loc-key`/`loc-key`/`loc-args`
        /// (`SWITCHBOARD_MISSED_CALL`, `SWITCHBOARD_MISSED_CALL_FROM`) for its `Localizable.strings`.
        case app
    }

    public init() {}
}

/// FCM HTTP v1 (Android rings).
public struct FCMSettings: Sendable, Equatable {
    /// The Firebase service-account JSON (project, client email, RSA key, token URI); empty
    /// leaves the channel off.
    public var serviceAccountFile = ""
    public var connection = PushServiceConnection(url: "https://fcm.googleapis.com", connections: 1)

    public init() {}
}

/// Huawei Push Kit (Huawei phones without Google services).
public struct HuaweiSettings: Sendable, Equatable {
    /// The AppGallery Connect app id and its secret (OAuth2 client credentials); empty leaves
    /// the channel off.
    public var appID = ""
    public var appSecret = ""
    /// Where the push API is; the token endpoint is `tokenURL`.
    public var connection = PushServiceConnection(url: "https://push-api.cloud.huawei.com", connections: 1)
    public var tokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public init() {}
}

/// Xiaomi MiPush (Xiaomi, Redmi, POCO phones).
public struct XiaomiSettings: Sendable, Equatable {
    /// The app secret (`Authorization: key=`) and the app's package name; empty leaves the
    /// channel off.
    public var appSecret = ""
    public var packageName = ""
    /// The notification channel the app registered for calls (Android 8+).
    public var channelID = ""
    /// Picks the host (`cn`, `sgp`, `fr`, `ru`, `idmb`) when `connection.url` is empty.
    public var region = "cn"
    /// `url` empty: the region's host. Several connections, as it may answer over HTTP/1.1
    /// (one request per connection at a time).
    public var connection = PushServiceConnection(url: "", connections: 4)

    /// The host to send to: `connection.url`, else the region's.
    var baseURL: String { connection.url.isEmpty ? XiaomiMessage.regionHosts[region] ?? "" : connection.url }

    public init() {}
}

/// OPPO push (OPPO, OnePlus, realme).
public struct OPPOSettings: Sendable, Equatable {
    /// The app key and master secret (the auth request's signature) and the notification
    /// channel id the app registered for calls; empty leaves the channel off.
    public var appKey = ""
    public var masterSecret = ""
    public var channelID = ""
    /// China's host, or `https://api-intl.push.oppomobile.com`.
    public var connection = PushServiceConnection(url: "https://api.push.oppomobile.com", connections: 4)

    public init() {}
}

/// vivo push (vivo, iQOO).
public struct VivoSettings: Sendable, Equatable {
    /// The app id, app key and app secret (the auth request's signature); empty leaves the
    /// channel off.
    public var appID = ""
    public var appKey = ""
    public var appSecret = ""
    public var connection = PushServiceConnection(url: "https://api-push.vivo.com.cn", connections: 4)

    public init() {}
}

/// Every push channel's settings.
public struct PushSettings: Sendable, Equatable {
    public var apns = APNsSettings()
    public var fcm = FCMSettings()
    public var huawei = HuaweiSettings()
    public var xiaomi = XiaomiSettings()
    public var oppo = OPPOSettings()
    public var vivo = VivoSettings()
    /// A token its app has not registered again for this many days is removed (an app
    /// registers its tokens at every start; one that stopped is uninstalled or long unused).
    public var tokenMaxAgeDays = 270

    /// The longest request deadline of the channels that are on (APNs always is): how long a
    /// push attempt may be in flight.
    var longestRequestTimeoutSeconds: Int {
        var deadline = apns.connection.requestTimeoutSeconds
        if !fcm.serviceAccountFile.isEmpty { deadline = max(deadline, fcm.connection.requestTimeoutSeconds) }
        if !huawei.appID.isEmpty { deadline = max(deadline, huawei.connection.requestTimeoutSeconds) }
        if !xiaomi.appSecret.isEmpty { deadline = max(deadline, xiaomi.connection.requestTimeoutSeconds) }
        if !oppo.appKey.isEmpty { deadline = max(deadline, oppo.connection.requestTimeoutSeconds) }
        if !vivo.appID.isEmpty { deadline = max(deadline, vivo.connection.requestTimeoutSeconds) }
        return deadline
    }

    public init() {}
}

/// How calls ring and end.
public struct CallSettings: Sendable, Equatable {
    /// Seconds a call rings before unanswered invitations become `missed`.
    public var ringTimeoutSeconds = 45
    /// Seconds an active call's media room may stay empty before the call ends `connection_lost`.
    public var emptyRoomGraceSeconds = 90
    /// Seconds between empty-room checks (when rooms are managed).
    public var emptyRoomCheckSeconds = 10
    /// Whether an ended call leaves a `call` message in its conversation or group.
    public var messages = Switch.on

    public init() {}
}

/// A setting that is on or off.
public enum Switch: String, Sendable, Equatable, CaseIterable {
    case on, off
}

/// How webhook deliveries are made (the endpoints themselves are configured through `/admin/webhooks`).
public struct WebhookSettings: Sendable, Equatable {
    /// Seconds one delivery request may take, connecting included.
    public var timeoutSeconds = 10
    /// The longest pause between two attempts at one delivery: the back-off doubles up to it.
    public var retryMaxSeconds = 3600
    /// Hours a delivery is retried before it is given up (dead-lettered).
    public var giveUpHours = 72

    public init() {}
}

/// The event feed.
public struct EventSettings: Sendable, Equatable {
    /// Days events are kept; older ones are pruned and older cursors get 410.
    public var retentionDays = 30
    /// Seconds between heartbeat comments on an idle event stream.
    public var heartbeatSeconds = 15

    public init() {}
}

/// Passwords and sessions.
public struct AccountSettings: Sendable, Equatable {
    /// log2 of scrypt's N for new password hashes (r = 8, p = 1); 17 (OWASP's advice) costs
    /// ~128 MiB and a few hundred milliseconds a hash; at least 15. Hashes made with another
    /// cost keep verifying and are replaced at the user's next login.
    public var passwordScryptLogN = 17
    /// Password checks, and separately new-password hashes, that may wait for a scrypt thread.
    public var passwordHashQueue = 64
    /// Days a session may go unused before it ends.
    public var sessionIdleDays = 30
    /// Days a session lives at most, however used.
    public var sessionMaxDays = 365

    public init() {}
}

/// The signed gateway.
public struct GatewaySettings: Sendable, Equatable {
    /// What to do with requests signed the version 1 way, which does not cover the app and key
    /// ids, while app servers move to version 2.
    public enum SignatureV1: String, Sendable, Equatable, CaseIterable {
        case refuse
        case accept
    }

    public var signatureV1 = SignatureV1.refuse

    public init() {}
}
