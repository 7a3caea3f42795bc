import Foundation
import SwitchboardObservability
import SwitchboardPush
import Synchronization

/// A gateway app's own push credentials (SPEC §8): settings of the server's push channels
/// (`apnsBundleID`, `apnsKeyFile`, `fcmServiceAccountFile`, `xiaomiAppSecret`, …, the keys of
/// `switchboard serve --help`). Each family the app names (apns, fcm, huawei, xiaomi, oppo,
/// vivo) is built from the app's settings alone, over the embedded defaults, never over the
/// server's: nothing of the server's credentials or endpoints reaches an app's channel. A
/// family the app names nothing of keeps the server's channel (and its connections).
struct GatewayPushSettings: Sendable, Equatable {
    /// The channel families, by the prefix of their settings.
    static let families = ["apns", "fcm", "huawei", "xiaomi", "oppo", "vivo"]
    /// The channels each family builds.
    static let channelsOfFamily = [
        "apns": [APNsVoIPChannel.channelName, APNsAlertChannel.channelName], "fcm": [FCMChannel.channelName],
        "huawei": [HuaweiChannel.channelName], "xiaomi": ["xiaomi"], "oppo": ["oppo"], "vivo": ["vivo"],
    ]

    /// Setting key → its text, as `serve` reads it.
    let values: [String: String]

    /// The families the app brings credentials for.
    var families: Set<String> { Set(values.keys.compactMap(Self.family(of:))) }

    static func family(of key: String) -> String? { families.first { key.hasPrefix($0) } }

    /// Checks every member of a request's `settings`: a push setting of the server, a JSON
    /// string or integer its rules accept; and each family named must configure its channel
    /// completely by itself (credentials that go together, a key file that loads, and for
    /// APNs the app's own bundle id), checked by building the channels without connecting.
    static func validate(_ object: [String: Any]) throws(APIError) -> GatewayPushSettings {
        guard !object.isEmpty, object.count <= 64 else {
            throw APIError.validation("'settings' must name 1 to 64 push settings", field: "settings")
        }
        var values: [String: String] = [:]
        var configuration = ServerConfiguration()
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let field = "settings.\(key.prefix(64))"
            guard family(of: key) != nil, let setting = ConfigurationSetting.all.first(where: { $0.key == key }) else {
                throw APIError.validation(
                    "'\(field)' is not a push setting (those starting with \(families.joined(separator: ", ")); see switchboard serve --help)",
                    field: field)
            }
            let text: String
            switch (setting.kind, value) {
            case (.text, let string as String): text = string
            case (.integer, let number as Int) where !(value is Bool): text = String(number)
            default:
                throw APIError.validation(
                    "'\(field)' must be a \(setting.kind == .integer ? "JSON integer" : "JSON string")", field: field)
            }
            if let problem = setting.set(text, in: &configuration) {
                throw APIError.validation("'\(field)' \(problem)", field: field)
            }
            values[key] = text
        }
        let settings = GatewayPushSettings(values: values)
        if settings.families.contains("apns"), values["apnsBundleID"] == nil {
            throw APIError.validation("'settings': an app's APNs settings name its own apnsBundleID", field: "settings")
        }
        for family in settings.families.sorted() {
            let channels: [any PushChannel]
            do {
                channels = try build(family: family, from: configuration)
            } catch {
                throw APIError.validation("'settings': \(error)", field: "settings")
            }
            // Built only to be checked: dropped unstarted (a client's deinit closes it).
            if let unconfigured = channels.first(where: { !$0.summary.configured }) {
                throw APIError.validation(
                    "'settings': the \(family) settings configure no credentials for \(unconfigured.name) (\(unconfigured.summary.hint))",
                    field: "settings")
            }
        }
        return settings
    }

    /// The app's settings over the embedded defaults (never over the server's configuration).
    var configuration: ServerConfiguration {
        var configuration = ServerConfiguration()
        for (key, text) in values {
            _ = ConfigurationSetting.all.first(where: { $0.key == key })?.set(text, in: &configuration)
        }
        return configuration
    }

    /// The channels of one family, from `configuration`.
    static func build(family: String, from configuration: ServerConfiguration) throws -> [any PushChannel] {
        switch family {
        case "apns":
            let voip = try PushChannelConfiguration.voipChannel(from: configuration)
            return [voip, APNsAlertChannel(sharingWith: voip)]
        case "fcm": return [try PushChannelConfiguration.fcmChannel(from: configuration)]
        case "huawei": return [try PushChannelConfiguration.huaweiChannel(from: configuration)]
        case "xiaomi": return [try PushChannelConfiguration.xiaomiChannel(from: configuration)]
        case "oppo": return [try PushChannelConfiguration.oppoChannel(from: configuration)]
        case "vivo": return [try PushChannelConfiguration.vivoChannel(from: configuration)]
        default: return []
        }
    }

    /// As stored: the values as sorted JSON, sealed under the server's data encryption key.
    func sealed(for app: String, vault: PayloadKeyVault) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys])
        return try vault.sealSecret(Array(data), purpose: "gw-push/\(app)")
    }

    /// The stored settings again; nil when they cannot be opened here.
    static func opened(_ sealed: String, for app: String, vault: PayloadKeyVault) -> GatewayPushSettings? {
        guard let bytes = vault.openSecret(sealed, purpose: "gw-push/\(app)"),
            let values = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: String]
        else { return nil }
        return GatewayPushSettings(values: values)
    }
}

/// The channels of every job: the server's, or a gateway app's when it brought its own
/// credentials (``GatewayPushSettings``). An app's channel set is built once for all the jobs
/// that ask together, and kept; its stored settings are looked at again at most every 30 s
/// (another instance may have changed them), at once after a change here, and a set that
/// could not be built is tried again at the next look.
final class GatewayChannelDirectory: PushChannelDirectory, Sendable {
    let server: PushChannels
    private let store: ServerStore
    private let vault: PayloadKeyVault
    private let logger: Logger
    static let recheckInterval: TimeInterval = 30

    private struct Entry: Sendable {
        let sealed: String?
        let channels: PushChannels
        /// The channels built for the app (the rest are the server's, shared).
        let owned: [any PushChannel]
        /// Some family could not be built: the next look tries again.
        let failed: Bool
        var checkedAt: Date
    }

    private struct State: Sendable {
        var entries: [String: Entry] = [:]
        /// Bumped by ``invalidate(app:)``: a look that began before it does not keep its result.
        var generations: [String: Int] = [:]
        /// The look in progress per app, which every job of the app awaits.
        var looks: [String: Task<PushChannels, any Error>] = [:]
    }

    private let state = Mutex(State())

    init(server: PushChannels, store: ServerStore, vault: PayloadKeyVault, logger: Logger) {
        self.server = server
        self.store = store
        self.vault = vault
        self.logger = logger
    }

    func channels(forCall callID: String) async throws -> PushChannels {
        guard let (app, _) = GatewayNamespace.split(callID) else { return server }
        return try await channels(forApp: app)
    }

    /// The channels of the app's jobs. Throws when its settings cannot be read and nothing is
    /// known of them yet (the store is down): never the server's channels instead.
    func channels(forApp app: String) async throws -> PushChannels {
        let now = store.environment.now()
        let look = state.withLock { state -> Task<PushChannels, any Error>? in
            if let entry = state.entries[app], now.timeIntervalSince(entry.checkedAt) < Self.recheckInterval {
                return nil
            }
            if let look = state.looks[app] { return look }
            let generation = state.generations[app, default: 0]
            let look = Task { try await self.look(app: app, generation: generation, now: now) }
            state.looks[app] = look
            return look
        }
        guard let look else {
            if let channels = state.withLock({ $0.entries[app]?.channels }) { return channels }
            return try await channels(forApp: app)
        }
        return try await look.value
    }

    private func look(app: String, generation: Int, now: Date) async throws -> PushChannels {
        defer { _ = state.withLock { $0.looks.removeValue(forKey: app) } }
        let sealed: String?
        do {
            sealed = try await store.snapshot { try $0.gateway.pushSettings(of: app) }
        } catch {
            // A stale set is still the app's; with none, the job waits (its claim lapses).
            if let channels = state.withLock({ $0.entries[app]?.channels }) { return channels }
            throw error
        }
        if let channels = state.withLock({ state -> PushChannels? in
            guard let entry = state.entries[app], entry.sealed == sealed, !entry.failed,
                state.generations[app, default: 0] == generation
            else { return nil }
            state.entries[app]?.checkedAt = now
            return entry.channels
        }) {
            return channels
        }
        let (channels, owned, failed) = build(app: app, sealed: sealed)
        state.withLock { state in
            // A change made here since the look began wins: its own look comes next.
            guard state.generations[app, default: 0] == generation else { return }
            // The set it replaces is dropped, not shut down: sends in flight on it finish, and
            // its clients close once the last is done.
            state.entries[app] = Entry(sealed: sealed, channels: channels, owned: owned, failed: failed, checkedAt: now)
        }
        return channels
    }

    /// The app's settings changed here: its next job looks again, and a look in progress is
    /// not kept.
    func invalidate(app: String) {
        state.withLock { state in
            state.generations[app, default: 0] += 1
            state.entries[app]?.checkedAt = .distantPast
        }
    }

    /// The app's families from its settings, the server's channels elsewhere. A family that
    /// cannot be built fails its jobs (not configured, with a reason logged), never takes the
    /// server's credentials instead.
    private func build(app: String, sealed: String?) -> (PushChannels, owned: [any PushChannel], failed: Bool) {
        guard let sealed else { return (server, [], false) }
        guard let settings = GatewayPushSettings.opened(sealed, for: app, vault: vault) else {
            logger.error(
                "gateway app's push settings cannot be opened with this server's dataEncryptionKey; its pushes fail until they are set again",
                [
                    "app": .string(app)
                ])
            let none = (try? PushChannelConfiguration.channels(from: ServerConfiguration())) ?? PushChannels([])
            return (none, none.all, true)
        }
        var own: [any PushChannel] = []
        var failed = false
        let configuration = settings.configuration
        for family in settings.families.sorted() {
            do {
                own += try GatewayPushSettings.build(family: family, from: configuration)
            } catch {
                failed = true
                logger.error(
                    "gateway app's push channel could not be built; its pushes on it fail until this is fixed",
                    [
                        "app": .string(app), "family": .string(family), "error": .string(String(describing: error)),
                    ])
                own += (try? GatewayPushSettings.build(family: family, from: ServerConfiguration())) ?? []
            }
        }
        let mine = Set(own.map(\.name))
        return (PushChannels(own + server.all.filter { !mine.contains($0.name) }), own, failed)
    }

    func shutdown() async {
        await server.shutdown()
        let owned = state.withLock { state -> [any PushChannel] in
            defer { state.entries = [:] }
            return state.entries.values.flatMap(\.owned)
        }
        for channel in owned { await channel.shutdown() }
    }
}
