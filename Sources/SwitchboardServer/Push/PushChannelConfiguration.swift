import Foundation
import SwitchboardCrypto
import SwitchboardPush

/// The push channels the configuration asks for.
enum PushChannelConfiguration {
    /// Every channel, configured or not (an unconfigured one fails its jobs at once, with a reason).
    static func channels(
        from configuration: ServerConfiguration, apnsTransport: (any PushTransport)? = nil,
        fcmTransport: (any PushTransport)? = nil,
        huaweiTransport: (any PushTransport)? = nil, vendorTransports: [String: any PushTransport] = [:]
    ) throws -> PushChannels {
        let voip = try voipChannel(from: configuration, transport: apnsTransport)
        return PushChannels([
            voip, APNsAlertChannel(sharingWith: voip, localizationKeys: configuration.push.apns.alertText == .app),
            try fcmChannel(from: configuration, transport: fcmTransport),
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
            throw ConfigurationError(
                message:
                    "\(values.map(\.0).joined(separator: ", ")) go together (set: \(set.map(\.0).joined(separator: ", ")))"
            )
        }
        return !set.isEmpty
    }

    /// Xiaomi MiPush when the app secret and package name are configured.
    static func xiaomiChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> VendorChannel {
        let xiaomi = configuration.push.xiaomi
        if let transport { return .xiaomi(transport: transport) }
        guard try together([("xiaomiAppSecret", xiaomi.appSecret), ("xiaomiPackageName", xiaomi.packageName)]) else {
            return .xiaomi(transport: nil)
        }
        let url = xiaomi.baseURL
        let transport = try XiaomiTransport(
            appSecret: xiaomi.appSecret, packageName: xiaomi.packageName,
            channelID: xiaomi.channelID.isEmpty ? nil : xiaomi.channelID, baseURL: url,
            caFile: xiaomi.connection.caFileOrNil, connections: xiaomi.connection.connections,
            requestTimeout: .seconds(xiaomi.connection.requestTimeoutSeconds))
        return .xiaomi(
            transport: transport, auth: "app secret, package \(xiaomi.packageName)", endpoints: url,
            caFile: xiaomi.connection.caFile)
    }

    /// OPPO push when the app key, master secret and channel id are configured.
    static func oppoChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> VendorChannel {
        let oppo = configuration.push.oppo
        if let transport { return .oppo(transport: transport) }
        guard
            try together([
                ("oppoAppKey", oppo.appKey), ("oppoMasterSecret", oppo.masterSecret), ("oppoChannelID", oppo.channelID),
            ])
        else { return .oppo(transport: nil) }
        let transport = try OPPOTransport(
            appKey: oppo.appKey, masterSecret: oppo.masterSecret, channelID: oppo.channelID,
            baseURL: oppo.connection.url, caFile: oppo.connection.caFileOrNil, connections: oppo.connection.connections,
            requestTimeout: .seconds(oppo.connection.requestTimeoutSeconds))
        return .oppo(
            transport: transport, auth: "signed auth token, app key \(oppo.appKey)", endpoints: oppo.connection.url,
            caFile: oppo.connection.caFile)
    }

    /// vivo push when the app id, key and secret are configured.
    static func vivoChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> VendorChannel {
        let vivo = configuration.push.vivo
        if let transport { return .vivo(transport: transport) }
        guard
            try together([
                ("vivoAppID", vivo.appID), ("vivoAppKey", vivo.appKey), ("vivoAppSecret", vivo.appSecret),
            ])
        else { return .vivo(transport: nil) }
        let transport = try VivoTransport(
            appID: vivo.appID, appKey: vivo.appKey, appSecret: vivo.appSecret, baseURL: vivo.connection.url,
            caFile: vivo.connection.caFileOrNil, connections: vivo.connection.connections,
            requestTimeout: .seconds(vivo.connection.requestTimeoutSeconds))
        return .vivo(
            transport: transport, auth: "signed auth token, app \(vivo.appID)", endpoints: vivo.connection.url,
            caFile: vivo.connection.caFile)
    }

    /// Huawei Push Kit when the app id and secret are configured; `transport` replaces its client (tests).
    static func huaweiChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> HuaweiChannel {
        let huawei = configuration.push.huawei
        if let transport { return HuaweiChannel(transport: transport) }
        guard !huawei.appID.isEmpty || !huawei.appSecret.isEmpty else { return HuaweiChannel() }
        guard !huawei.appID.isEmpty, !huawei.appSecret.isEmpty else {
            throw ConfigurationError(message: "huaweiAppID and huaweiAppSecret go together")
        }
        let transport = try HuaweiTransport(
            appID: huawei.appID, appSecret: huawei.appSecret, baseURL: huawei.connection.url,
            tokenURL: huawei.tokenURL, caFile: huawei.connection.caFileOrNil,
            connections: 1, requestTimeout: .seconds(huawei.connection.requestTimeoutSeconds))
        return HuaweiChannel(
            transport: transport, auth: "client credentials, app \(huawei.appID)",
            endpoints: "\(huawei.connection.url), tokens \(huawei.tokenURL)", caFile: huawei.connection.caFile)
    }

    /// FCM when a service account is configured; `transport` replaces the FCM client (tests).
    static func fcmChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> FCMChannel {
        let fcm = configuration.push.fcm
        if let transport { return FCMChannel(transport: transport) }
        guard !fcm.serviceAccountFile.isEmpty else { return FCMChannel() }
        guard let json = FileManager.default.contents(atPath: fcm.serviceAccountFile) else {
            throw ConfigurationError(message: "cannot read fcmServiceAccountFile \(fcm.serviceAccountFile)")
        }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: Array(json))
        } catch {
            throw ConfigurationError(message: "fcmServiceAccountFile \(fcm.serviceAccountFile): \(error)")
        }
        let transport = try FCMTransport(
            account: account, baseURL: fcm.connection.url, caFile: fcm.connection.caFileOrNil,
            connections: fcm.connection.connections, requestTimeout: .seconds(fcm.connection.requestTimeoutSeconds))
        return FCMChannel(
            transport: transport, auth: "service account \(account.clientEmail), project \(account.projectID)",
            endpoints: "\(fcm.connection.url), tokens \(account.tokenURI)", caFile: fcm.connection.caFile)
    }

    /// The channel over APNs when credentials are configured, otherwise one whose pushes fail at
    /// once (rings are still written, with a reason). `transport` replaces the APNs client (tests).
    static func voipChannel(
        from configuration: ServerConfiguration, transport: (any PushTransport)? = nil
    ) throws -> APNsVoIPChannel {
        let settings = configuration.push.apns
        if let transport { return APNsVoIPChannel(bundleID: settings.bundleID, transport: transport) }
        let credentials: APNsCredentials
        let auth: String
        if !settings.keyFile.isEmpty {
            guard settings.teamID.count == 10, settings.keyID.count == 10 else {
                throw ConfigurationError(message: "apnsTeamID and apnsKeyID (10 characters each) go with apnsKeyFile")
            }
            guard
                let pem = FileManager.default.contents(atPath: settings.keyFile).map({
                    String(decoding: $0, as: UTF8.self)
                })
            else {
                throw ConfigurationError(message: "cannot read apnsKeyFile \(settings.keyFile)")
            }
            credentials = .token(teamID: settings.teamID, keyID: settings.keyID, key: try ES256PrivateKey(pem: pem))
            auth = "token (team \(settings.teamID), key \(settings.keyID)), topic \(settings.bundleID).voip"
        } else if !settings.certificateFile.isEmpty {
            credentials = .certificate(certificateFile: settings.certificateFile, keyFile: settings.certificateKeyFile)
            auth = "certificate \(settings.certificateFile), topic \(settings.bundleID).voip"
        } else {
            return APNsVoIPChannel(unconfiguredFor: settings.bundleID)
        }
        let apns = try APNsProvider(
            configuration: APNsConfiguration(
                credentials: credentials, productionURL: settings.connection.url, sandboxURL: settings.sandboxURL,
                caFile: settings.connection.caFileOrNil,
                connectionsPerEnvironment: settings.connection.connections,
                requestTimeout: .seconds(settings.connection.requestTimeoutSeconds)))
        return APNsVoIPChannel(
            bundleID: settings.bundleID, transport: APNsTransport(apns: apns), auth: auth,
            endpoints: "production \(settings.connection.url), sandbox \(settings.sandboxURL)",
            caFile: settings.connection.caFile)
    }
}
