import Foundation
import SwitchboardCrypto
import SwitchboardPush

/// The push channels the configuration asks for.
enum PushChannelConfiguration {
    /// Every channel, configured or not (an unconfigured one fails its jobs at once, with a reason).
    static func channels(
        from configuration: ServerConfiguration, apnsTransport: (any PushTransport)? = nil, fcmTransport: (any PushTransport)? = nil,
        huaweiTransport: (any PushTransport)? = nil
    ) throws -> PushChannels {
        let voip = try voipChannel(from: configuration, transport: apnsTransport)
        return PushChannels([
            voip, APNsAlertChannel(sharingWith: voip), try fcmChannel(from: configuration, transport: fcmTransport),
            try huaweiChannel(from: configuration, transport: huaweiTransport),
        ])
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
