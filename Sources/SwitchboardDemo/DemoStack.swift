import Foundation
import SwitchboardAPNsEmulator
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardServer
import SwitchboardWire
import SwitchboardObservability

/// The whole system in one process: the server on a temporary SQLite database, the push
/// emulator (TLS, as Apple's) standing in for APNs, FCM and Xiaomi, and simulated phones whose
/// pushes come from the emulator's inboxes.
/// The demo and the wake-up bench stand on it.
public final class DemoStack: Sendable {
    public struct Options: Sendable {
        /// Seconds a call rings before it is missed (the server's minimum is 5).
        public var ringTimeoutSeconds = 45
        public var logLevel = LogLevel.error
        /// The address the server listens on (the root side of a veth for the kernel
        /// impairment; loopback otherwise).
        public var listenHost = "127.0.0.1"
        public init() {}
    }

    static let bundleID = "com.example.switchboard.demo"
    static let password = "demo password 1"

    public let server: EmbeddedServer
    public let emulator: APNsEmulator
    public let directory: String
    public let baseURL: URL

    public init(options: Options = Options()) async throws {
        directory = NSTemporaryDirectory() + "switchboard-demo-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let key = try ES256PrivateKey.generate()
        let keyFile = directory + "/AuthKey.p8", caFile = directory + "/emulator-ca.pem"
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)

        var emulatorConfiguration = APNsEmulatorConfiguration(port: 0)
        emulatorConfiguration.bundleID = Self.bundleID
        emulatorConfiguration.teamID = "DEMOTEAM01"
        emulatorConfiguration.keyID = "DEMOKEY001"
        emulatorConfiguration.publicKey = key.publicKey
        emulatorConfiguration.tls = APNsEmulatorTLS()
        // Android: an FCM service account (its key made here) and a Xiaomi app.
        let fcmKey = try RS256PrivateKey.generate()
        emulatorConfiguration.fcmAccount = FCMEmulatorAccount(
            projectID: "switchboard-demo", clientEmail: "push@switchboard-demo.iam.gserviceaccount.com",
            publicKey: fcmKey.publicKey)
        emulatorConfiguration.xiaomiApp = XiaomiEmulatorApp(
            packageName: "com.example.switchboard.demo", appSecret: "demo-xiaomi-secret")
        emulator = APNsEmulator(configuration: emulatorConfiguration)
        let address = try emulator.start()
        try (emulator.certificatePEM ?? "").write(toFile: caFile, atomically: true, encoding: .utf8)
        let serviceAccount = directory + "/fcm-service-account.json"
        try JSONSerialization.data(withJSONObject: [
            "type": "service_account", "project_id": "switchboard-demo", "private_key_id": "demo",
            "private_key": try fcmKey.pkcs8PEM(), "client_email": "push@switchboard-demo.iam.gserviceaccount.com",
            "token_uri": "https://localhost:\(address.port)/token",
        ]).write(to: URL(fileURLWithPath: serviceAccount))

        var configuration = ServerConfiguration()
        configuration.http.listen = SocketAddress(host: options.listenHost, port: 0)
        configuration.store.dataDirectory = directory + "/data"
        configuration.logLevel = options.logLevel
        configuration.calls.ringTimeoutSeconds = options.ringTimeoutSeconds
        configuration.accounts.passwordScryptLogN = 10
        configuration.limits = .lifted  // the harness rings its phones far more often than any person would
        configuration.http.maxConnectionsPerAddress = 0  // every phone is on this machine
        configuration.http.shutdownGraceSeconds = 1
        configuration.push.apns.bundleID = Self.bundleID
        configuration.push.apns.teamID = "DEMOTEAM01"
        configuration.push.apns.keyID = "DEMOKEY001"
        configuration.push.apns.keyFile = keyFile
        configuration.push.apns.connection.caFile = caFile
        configuration.push.apns.connection.url = "https://localhost:\(address.port)"
        configuration.push.apns.sandboxURL = "https://localhost:\(address.port)"
        configuration.push.fcm.serviceAccountFile = serviceAccount
        configuration.push.fcm.connection.url = "https://localhost:\(address.port)"
        configuration.push.fcm.connection.caFile = caFile
        configuration.push.xiaomi.appSecret = "demo-xiaomi-secret"
        configuration.push.xiaomi.packageName = "com.example.switchboard.demo"
        configuration.push.xiaomi.channelID = "calls"
        configuration.push.xiaomi.connection.url = "https://localhost:\(address.port)"
        configuration.push.xiaomi.connection.caFile = caFile
        do {
            server = try EmbeddedServer(
                configuration: configuration,
                logger: Logger(level: options.logLevel, sink: FileDescriptorLogSink.standardError))
            try server.start()
        } catch {
            await emulator.shutdown()
            throw error
        }
        baseURL = URL(string: "http://\(server.address)")!
    }

    /// Stops the server and the emulator and removes the temporary directory.
    public func shutDown() async {
        await server.stop()
        await emulator.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Registers a user.
    public func register(_ username: String, displayName: String? = nil) async throws -> AuthSession {
        try await SwitchboardClient(baseURL: baseURL).register(
            username: username, password: Self.password, displayName: displayName ?? username)
    }

    /// Makes two users friends; returns their conversation id.
    public func befriend(_ a: AuthSession, _ b: AuthSession) async throws -> String {
        let request = try await client(a).sendFriendRequest(toUserID: b.user.id)
        return try await client(b).acceptFriendRequest(request.id).conversationId
    }

    public func client(_ session: AuthSession, baseURL: URL? = nil) -> SwitchboardClient {
        SwitchboardClient(baseURL: baseURL ?? self.baseURL, token: session.token)
    }

    /// A phone of `session`'s user whose pushes come from the emulator's inbox for its token
    /// (each delayed by `pushDelay` seconds when given), or from `pushSource` for `pushToken`.
    /// `transport` and `eventTransport` replace the SDK's default transports (a bench wraps
    /// them to time each request).
    public func phone(
        _ name: String, of session: AuthSession, baseURL: URL? = nil, pushDelay: (@Sendable () -> Double)? = nil,
        transport: (any HTTPTransport)? = nil, eventTransport: (any HTTPTransport)? = nil,
        callEventTransport: (any HTTPTransport)? = nil,
        pushSource: (any PushSource)? = nil, pushToken: String? = nil,
        onTimeline: @escaping @Sendable (PhoneTimelineEntry) -> Void = { _ in }
    ) -> SimulatedPhone {
        let token = pushToken ?? Self.newPushToken()
        let client = SwitchboardClient(
            baseURL: baseURL ?? self.baseURL, token: session.token, transport: transport ?? HedgingTransport(),
            eventTransport: eventTransport,
            callEventTransport: callEventTransport)
        return SimulatedPhone(
            name: name, userID: session.user.id, client: client,
            pushSource: pushSource ?? EmulatorInbox(emulator: emulator, token: token, delay: pushDelay),
            pushToken: token,
            onTimeline: onTimeline)
    }

    /// A random 32-byte VoIP token in hex.
    public static func newPushToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// A phone's pushes from the in-process emulator's inbox, optionally each delayed (a weak network
/// between APNs and the phone).
struct EmulatorInbox: PushSource {
    let emulator: APNsEmulator
    let token: String
    let delay: (@Sendable () -> Double)?

    func pushes(after: Int, wait: Double) async throws -> (payloads: [Data], cursor: Int) {
        let messages = await emulator.inbox(token: token, after: after, waitingUpTo: wait)
        try Task.checkCancellation()
        guard let last = messages.last else { return ([], after) }
        if let seconds = delay?(), seconds > 0 { try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000)) }
        return (messages.map { Data($0.payload) }, last.index)
    }
}
