import Foundation
import SwitchboardCrypto
import SwitchboardPush

/// The outbox's provider for APNs.
struct APNsPushProvider: PushProvider {
    let apns: APNsProvider
    let channel: PushChannelSummary
    var name: String { "apns" }

    func send(_ job: PushJob) async -> PushSendResult {
        switch await apns.send(deviceToken: job.token, environment: job.environment, headers: job.headers, payload: job.payload) {
        case .response(let status, let reason, _): .response(status: status, reason: reason)
        case .transportFailure(let message): .transportFailure(message)
        }
    }

    func shutdown() async { await apns.shutdown() }

    /// The provider the configuration asks for, or `nil` when APNs is not configured.
    static func make(from configuration: ServerConfiguration) throws -> APNsPushProvider? {
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
            return nil
        }
        return APNsPushProvider(apns: try APNsProvider(configuration: APNsConfiguration(
            credentials: credentials, productionURL: configuration.apnsProductionURL, sandboxURL: configuration.apnsSandboxURL,
            caFile: configuration.apnsCAFile.isEmpty ? nil : configuration.apnsCAFile,
            connectionsPerEnvironment: configuration.apnsConnections,
            requestTimeout: .seconds(configuration.apnsRequestTimeoutSeconds))),
            channel: PushChannelSummary(
                provider: "apns", configured: true, auth: auth,
                endpoints: "production \(configuration.apnsProductionURL), sandbox \(configuration.apnsSandboxURL)",
                caFile: configuration.apnsCAFile))
    }
}
