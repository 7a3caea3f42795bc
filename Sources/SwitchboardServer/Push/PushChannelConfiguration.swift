import Foundation
import SwitchboardCrypto
import SwitchboardPush

/// The push channels the configuration asks for.
enum PushChannelConfiguration {
    /// Every channel, configured or not (an unconfigured one fails its jobs at once, with a reason).
    static func channels(
        from configuration: ServerConfiguration, apnsTransport: (any PushTransport)? = nil, fcmTransport: (any PushTransport)? = nil,
        huaweiTransport: (any PushTransport)? = nil, vendorTransports: [String: any PushTransport] = [:]
    ) throws -> PushChannels {
        let voip = try voipChannel(from: configuration, transport: apnsTransport)
        return PushChannels([
            voip, APNsAlertChannel(sharingWith: voip), try fcmChannel(from: configuration, transport: fcmTransport),
            try huaweiChannel(from: configuration, transport: huaweiTransport),
            try xiaomiChannel(from: configuration, transport: vendorTransports["xiaomi"]),
            try oppoChannel(from: configuration, transport: vendorTransports["oppo"]),
            try vivoChannel(from: configuration, transport: vendorTransports["vivo"]),
        ])
    }

    /// Throws unless the settings `names` are all set or all empty; `true` when all are set.
    private static func together(_ values: [(String, String)]) throws -> Bool {
        let set = values.filter { !$0.1.isEmpty }
        guard set.isEmpty || set.count == values.count else {
            throw ConfigurationError(message: "\(values.map(\.0).joined(separator: ", ")) go together (set: \(set.map(\.0).joined(separator: ", ")))")
        }
        return !set.isEmpty
    }

    private static func caFile(_ path: String) -> String? { path.isEmpty ? nil : path }

    /// Xiaomi MiPush when the app secret and package name are configured.
    static func xiaomiChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> VendorChannel {
        if let transport { return .xiaomi(transport: transport) }
        guard try together([("xiaomiAppSecret", configuration.xiaomiAppSecret), ("xiaomiPackageName", configuration.xiaomiPackageName)]) else {
            return .xiaomi(transport: nil)
        }
        let url = configuration.xiaomiBaseURL
        let transport = try XiaomiTransport(
            appSecret: configuration.xiaomiAppSecret, packageName: configuration.xiaomiPackageName,
            channelID: configuration.xiaomiChannelID.isEmpty ? nil : configuration.xiaomiChannelID, baseURL: url,
            caFile: caFile(configuration.xiaomiCAFile), connections: configuration.xiaomiConnections, requestTimeout: .seconds(configuration.xiaomiRequestTimeoutSeconds))
        return .xiaomi(transport: transport, auth: "app secret, package \(configuration.xiaomiPackageName)", endpoints: url, caFile: configuration.xiaomiCAFile)
    }

    /// OPPO push when the app key, master secret and channel id are configured.
    static func oppoChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> VendorChannel {
        if let transport { return .oppo(transport: transport) }
        guard try together([
            ("oppoAppKey", configuration.oppoAppKey), ("oppoMasterSecret", configuration.oppoMasterSecret), ("oppoChannelID", configuration.oppoChannelID),
        ]) else { return .oppo(transport: nil) }
        let transport = try OPPOTransport(
            appKey: configuration.oppoAppKey, masterSecret: configuration.oppoMasterSecret, channelID: configuration.oppoChannelID,
            baseURL: configuration.oppoURL, caFile: caFile(configuration.oppoCAFile), connections: configuration.oppoConnections,
            requestTimeout: .seconds(configuration.oppoRequestTimeoutSeconds))
        return .oppo(transport: transport, auth: "signed auth token, app key \(configuration.oppoAppKey)", endpoints: configuration.oppoURL, caFile: configuration.oppoCAFile)
    }

    /// vivo push when the app id, key and secret are configured.
    static func vivoChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> VendorChannel {
        if let transport { return .vivo(transport: transport) }
        guard try together([
            ("vivoAppID", configuration.vivoAppID), ("vivoAppKey", configuration.vivoAppKey), ("vivoAppSecret", configuration.vivoAppSecret),
        ]) else { return .vivo(transport: nil) }
        let transport = try VivoTransport(
            appID: configuration.vivoAppID, appKey: configuration.vivoAppKey, appSecret: configuration.vivoAppSecret, baseURL: configuration.vivoURL,
            caFile: caFile(configuration.vivoCAFile), connections: configuration.vivoConnections, requestTimeout: .seconds(configuration.vivoRequestTimeoutSeconds))
        return .vivo(transport: transport, auth: "signed auth token, app \(configuration.vivoAppID)", endpoints: configuration.vivoURL, caFile: configuration.vivoCAFile)
    }

    /// Huawei Push Kit when the app id and secret are configured; `transport` replaces its client (tests).
    static func huaweiChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> HuaweiChannel {
        if let transport { return HuaweiChannel(transport: transport) }
        guard !configuration.huaweiAppID.isEmpty || !configuration.huaweiAppSecret.isEmpty else { return HuaweiChannel() }
        guard !configuration.huaweiAppID.isEmpty, !configuration.huaweiAppSecret.isEmpty else {
            throw ConfigurationError(message: "huaweiAppID and huaweiAppSecret go together")
        }
        let transport = try HuaweiTransport(
            appID: configuration.huaweiAppID, appSecret: configuration.huaweiAppSecret, baseURL: configuration.huaweiURL,
            tokenURL: configuration.huaweiTokenURL, caFile: configuration.huaweiCAFile.isEmpty ? nil : configuration.huaweiCAFile,
            connections: 1, requestTimeout: .seconds(configuration.huaweiRequestTimeoutSeconds))
        return HuaweiChannel(
            transport: transport, auth: "client credentials, app \(configuration.huaweiAppID)",
            endpoints: "\(configuration.huaweiURL), tokens \(configuration.huaweiTokenURL)", caFile: configuration.huaweiCAFile)
    }

    /// FCM when a service account is configured; `transport` replaces the FCM client (tests).
    static func fcmChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> FCMChannel {
        if let transport { return FCMChannel(transport: transport) }
        guard !configuration.fcmServiceAccountFile.isEmpty else { return FCMChannel() }
        guard let json = FileManager.default.contents(atPath: configuration.fcmServiceAccountFile) else {
            throw ConfigurationError(message: "cannot read fcmServiceAccountFile \(configuration.fcmServiceAccountFile)")
        }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: Array(json))
        } catch {
            throw ConfigurationError(message: "fcmServiceAccountFile \(configuration.fcmServiceAccountFile): \(error)")
        }
        let transport = try FCMTransport(
            account: account, baseURL: configuration.fcmURL, caFile: configuration.fcmCAFile.isEmpty ? nil : configuration.fcmCAFile,
            connections: configuration.fcmConnections, requestTimeout: .seconds(configuration.fcmRequestTimeoutSeconds))
        return FCMChannel(
            transport: transport, auth: "service account \(account.clientEmail), project \(account.projectID)",
            endpoints: "\(configuration.fcmURL), tokens \(account.tokenURI)", caFile: configuration.fcmCAFile)
    }

    /// The channel over APNs when credentials are configured, otherwise one whose pushes fail at
    /// once (rings are still written, with a reason). `transport` replaces the APNs client (tests).
    static func voipChannel(from configuration: ServerConfiguration, transport: (any PushTransport)? = nil) throws -> APNsVoIPChannel {
        if let transport { return APNsVoIPChannel(bundleID: configuration.apnsBundleID, transport: transport) }
        let credentials: APNsCredentials
        let auth: String
        if !configuration.apnsKeyFile.isEmpty {
            guard configuration.apnsTeamID.count == 10, configuration.apnsKeyID.count == 10 else {
                throw ConfigurationError(message: "apnsTeamID and apnsKeyID (10 characters each) go with apnsKeyFile")
            }
            guard let pem = FileManager.default.contents(atPath: configuration.apnsKeyFile).map({ String(decoding: $0, as: UTF8.self) }) else {
                throw ConfigurationError(message: "cannot read apnsKeyFile \(configuration.apnsKeyFile)")
            }
            credentials = .token(teamID: configuration.apnsTeamID, keyID: configuration.apnsKeyID, key: try ES256PrivateKey(pem: pem))
            auth = "token (team \(configuration.apnsTeamID), key \(configuration.apnsKeyID)), topic \(configuration.apnsBundleID).voip"
        } else if !configuration.apnsCertificateFile.isEmpty {
            credentials = .certificate(certificateFile: configuration.apnsCertificateFile, keyFile: configuration.apnsCertificateKeyFile)
            auth = "certificate \(configuration.apnsCertificateFile), topic \(configuration.apnsBundleID).voip"
        } else {
            return APNsVoIPChannel(unconfiguredFor: configuration.apnsBundleID)
        }
        let apns = try APNsProvider(configuration: APNsConfiguration(
            credentials: credentials, productionURL: configuration.apnsProductionURL, sandboxURL: configuration.apnsSandboxURL,
            caFile: configuration.apnsCAFile.isEmpty ? nil : configuration.apnsCAFile,
            connectionsPerEnvironment: configuration.apnsConnections,
            requestTimeout: .seconds(configuration.apnsRequestTimeoutSeconds)))
        return APNsVoIPChannel(
            bundleID: configuration.apnsBundleID, transport: APNsTransport(apns: apns), auth: auth,
            endpoints: "production \(configuration.apnsProductionURL), sandbox \(configuration.apnsSandboxURL)",
            caFile: configuration.apnsCAFile)
    }
}
