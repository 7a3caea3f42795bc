import Foundation
import SwitchboardObservability
import SwitchboardPush
import Synchronization

/// A gateway app's own push credentials (SPEC §8): settings of the server's push channels
/// (`apnsBundleID`, `apnsKeyFile`, `fcmServiceAccountFile`, `xiaomiAppSecret`, …, the keys of
/// `switchboard serve --help`) that replace the server's for the app's jobs. A channel family
/// the app names none of keeps the server's channel (and its connections).
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
    var families: Set<String> { Set(values.keys.compactMap { key in Self.families.first { key.hasPrefix($0) } }) }

    /// Checks every member of a request's `settings`: a push setting of the server, a JSON
    /// string or integer its rules accept; the families' settings must go together as in the
    /// server's own configuration (checked by building the channels, without connecting).
    static func validate(_ object: [String: Any], over base: ServerConfiguration) throws(APIError) -> GatewayPushSettings {
        guard !object.isEmpty, object.count <= 64 else {
            throw APIError.validation("'settings' must name 1 to 64 push settings", field: "settings")
        }
        var values: [String: String] = [:]
        var configuration = base
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let field = "settings.\(key.prefix(64))"
            guard families.contains(where: { key.hasPrefix($0) }), let setting = ConfigurationSetting.all.first(where: { $0.key == key }) else {
                throw APIError.validation(
                    "'\(field)' is not a push setting (those starting with \(families.joined(separator: ", ")); see switchboard serve --help)",
                    field: field)
            }
            let text: String
            switch (setting.kind, value) {
            case (.text, let string as String): text = string
            case (.integer, let number as Int) where !(value is Bool): text = String(number)
            default:
                throw APIError.validation("'\(field)' must be a \(setting.kind == .integer ? "JSON integer" : "JSON string")", field: field)
            }
            if let problem = setting.set(text, in: &configuration) {
                throw APIError.validation("'\(field)' \(problem)", field: field)
            }
            values[key] = text
        }
        let settings = GatewayPushSettings(values: values)
        do {
            _ = try settings.channelConfigurationCheck(configuration)
        } catch {
            throw APIError.validation("'settings': \(error)", field: "settings")
        }
        return settings
    }

    /// The server's configuration with these settings in place.
    func configuration(over base: ServerConfiguration) -> ServerConfiguration {
        var configuration = base
        for (key, text) in values {
            _ = ConfigurationSetting.all.first(where: { $0.key == key })?.set(text, in: &configuration)
        }
        return configuration
    }

    /// Builds (and at once shuts down) the families' channels: throws what the server's own
    /// configuration would refuse (settings that go together, a key file that does not load).
    private func channelConfigurationCheck(_ configuration: ServerConfiguration) throws -> Bool {
        let built = try Self.build(families: families, from: configuration)
        let channels = built
        Task { for channel in channels { await channel.shutdown() } }
        return true
    }

    /// The channels of `families`, from `configuration`.
    static func build(families: Set<String>, from configuration: ServerConfiguration) throws -> [any PushChannel] {
        var channels: [any PushChannel] = []
        if families.contains("apns") {
            let voip = try PushChannelConfiguration.voipChannel(from: configuration)
            channels += [voip, APNsAlertChannel(sharingWith: voip)]
        }
        if families.contains("fcm") { channels.append(try PushChannelConfiguration.fcmChannel(from: configuration)) }
        if families.contains("huawei") { channels.append(try PushChannelConfiguration.huaweiChannel(from: configuration)) }
        if families.contains("xiaomi") { channels.append(try PushChannelConfiguration.xiaomiChannel(from: configuration)) }
        if families.contains("oppo") { channels.append(try PushChannelConfiguration.oppoChannel(from: configuration)) }
        if families.contains("vivo") { channels.append(try PushChannelConfiguration.vivoChannel(from: configuration)) }
        return channels
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
/// credentials (``GatewayPushSettings``). An app's channel set is built on its first job and
/// kept; its stored settings are looked at again at most every 30 s (another instance may have
/// changed them) and at once after a change here.
final class GatewayChannelDirectory: PushChannelDirectory, Sendable {
    let server: PushChannels
    private let base: ServerConfiguration
    private let store: ServerStore
    private let vault: PayloadKeyVault
    private let logger: Logger
    static let recheckInterval: TimeInterval = 30

    private struct Entry: Sendable {
        let sealed: String?
        let channels: PushChannels
        /// The channels built for the app (the rest are the server's, shared).
        let owned: [any PushChannel]
        var checkedAt: Date
    }

    private let entries = Mutex<[String: Entry]>([:])

    init(server: PushChannels, base: ServerConfiguration, store: ServerStore, vault: PayloadKeyVault, logger: Logger) {
        self.server = server
        self.base = base
        self.store = store
        self.vault = vault
        self.logger = logger
    }

    func channels(forCall callID: String) async -> PushChannels {
        guard let (app, _) = GatewayNamespace.split(callID) else { return server }
        return await channels(forApp: app)
    }

    /// The channels of the app's jobs.
    func channels(forApp app: String) async -> PushChannels {
        let now = store.environment.now()
        if let entry = entries.withLock({ $0[app] }), now.timeIntervalSince(entry.checkedAt) < Self.recheckInterval { return entry.channels }
        let sealed: String?
        do {
            sealed = try await store.snapshot { try $0.gateway.pushSettings(of: app) }
        } catch {
            return entries.withLock { $0[app]?.channels } ?? server
        }
        if let channels = entries.withLock({ entries -> PushChannels? in
            guard entries[app]?.sealed == sealed else { return nil }
            entries[app]?.checkedAt = now
            return entries[app]?.channels
        }) { return channels }
        let (channels, owned) = build(app: app, sealed: sealed)
        let replaced = entries.withLock { entries -> [any PushChannel] in
            let old = entries[app]?.owned ?? []
            entries[app] = Entry(sealed: sealed, channels: channels, owned: owned, checkedAt: now)
            return old
        }
        if !replaced.isEmpty { Task { for channel in replaced { await channel.shutdown() } } }
        return channels
    }

    /// The app's settings changed here: its next job builds its channels again.
    func invalidate(app: String) {
        entries.withLock { $0[app]?.checkedAt = .distantPast }
    }

    private func build(app: String, sealed: String?) -> (PushChannels, [any PushChannel]) {
        guard let sealed else { return (server, []) }
        do {
            guard let settings = GatewayPushSettings.opened(sealed, for: app, vault: vault) else {
                throw ConfigurationError(message: "its stored push settings cannot be opened with this server's dataEncryptionKey")
            }
            let owned = try GatewayPushSettings.build(families: settings.families, from: settings.configuration(over: base))
            let mine = Set(owned.map(\.name))
            return (PushChannels(owned + server.all.filter { !mine.contains($0.name) }), owned)
        } catch {
            // Never the server's credentials instead: its jobs fail visibly, with a reason.
            logger.error("gateway app's push channels could not be built; its pushes fail until its settings are fixed", [
                "app": .string(app), "error": .string(String(describing: error)),
            ])
            let none = (try? PushChannelConfiguration.channels(from: ServerConfiguration())) ?? PushChannels([])
            return (none, none.all)
        }
    }

    func shutdown() async {
        await server.shutdown()
        let owned = entries.withLock { entries -> [any PushChannel] in
            defer { entries = [:] }
            return entries.values.flatMap(\.owned)
        }
        for channel in owned { await channel.shutdown() }
    }
}
