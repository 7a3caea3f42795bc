import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPushCore

/// How the provider authenticates to APNs.
public enum APNsCredentials: Sendable {
    /// A provider token (JWT, ES256) from a `.p8` key, shared by every connection.
    case token(teamID: String, keyID: String, key: ES256PrivateKey)
    /// A TLS client certificate and its key (PEM files).
    case certificate(certificateFile: String, keyFile: String)
}

/// Where and how to reach APNs; the base URLs and CA file can point at an emulator.
public struct APNsConfiguration: Sendable {
    public var credentials: APNsCredentials
    /// `https://api.push.apple.com` unless pointed elsewhere (an emulator).
    public var productionURL: String
    /// `https://api.sandbox.push.apple.com` unless pointed elsewhere.
    public var sandboxURL: String
    /// A CA bundle to trust instead of the system's (an emulator's self-signed certificate).
    public var caFile: String?
    /// Long-lived HTTP/2 connections per environment.
    public var connectionsPerEnvironment: Int
    /// Streams in flight per connection.
    public var maxConcurrentStreams: Int
    /// The deadline of one request.
    public var requestTimeout: Duration

    public init(
        credentials: APNsCredentials, productionURL: String = "https://api.push.apple.com",
        sandboxURL: String = "https://api.sandbox.push.apple.com", caFile: String? = nil,
        connectionsPerEnvironment: Int = 1,
        maxConcurrentStreams: Int = 500, requestTimeout: Duration = .seconds(10)
    ) {
        self.credentials = credentials
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.caFile = caFile
        self.connectionsPerEnvironment = connectionsPerEnvironment
        self.maxConcurrentStreams = maxConcurrentStreams
        self.requestTimeout = requestTimeout
    }
}

/// What APNs answered.
public enum APNsResult: Sendable, Equatable {
    case response(status: Int, reason: String?, apnsID: String?)
    case transportFailure(String)
}

/// Sends pushes to APNs over long-lived multiplexed HTTP/2 connections, one client per
/// environment; provider tokens are minted and refreshed by `ProviderTokenClock`'s rules.
public final class APNsProvider: Sendable {
    private let configuration: APNsConfiguration
    private let production: HTTP2Client
    private let sandbox: HTTP2Client
    private let now: @Sendable () -> Date
    private let tokens = Mutex<(clock: ProviderTokenClock, current: String?)>((ProviderTokenClock(), nil))

    /// Opens nothing yet: connections are made on first use and kept.
    public init(configuration: APNsConfiguration, now: @escaping @Sendable () -> Date = { Date() }) throws {
        self.configuration = configuration
        self.now = now
        func client(_ base: String) throws -> HTTP2Client {
            var settings = HTTP2ClientConfiguration(baseURL: base)
            settings.maxConnections = configuration.connectionsPerEnvironment
            settings.maxConcurrentStreams = configuration.maxConcurrentStreams
            settings.requestTimeout = configuration.requestTimeout
            settings.caFile = configuration.caFile
            settings.priorKnowledge = base.hasPrefix("http://")
            if case .certificate(let certificate, let key) = configuration.credentials {
                settings.clientCertificatePEM = certificate
                settings.clientKeyPEM = key
            }
            return try HTTP2Client(configuration: settings)
        }
        production = try client(configuration.productionURL)
        sandbox = try client(configuration.sandboxURL)
    }

    /// Sends one push to `/3/device/<token>` in the token's environment.
    public func send(
        deviceToken: String, environment: String, headers: [(String, String)], payload: [UInt8]
    ) async -> APNsResult {
        var requestHeaders = headers
        var tokenIssuedAt: Date?
        if case .token(let teamID, let keyID, let key) = configuration.credentials {
            do {
                let (token, issuedAt) = try providerToken(teamID: teamID, keyID: keyID, key: key)
                requestHeaders.append(("authorization", "bearer \(token)"))
                tokenIssuedAt = issuedAt
            } catch {
                return .transportFailure("cannot sign the provider token: \(error)")
            }
        }
        let client = environment == "sandbox" ? sandbox : production
        let response: HTTP2Response
        do {
            response = try await client.send(
                HTTP2Request(method: "POST", path: "/3/device/\(deviceToken)", headers: requestHeaders, body: payload))
        } catch {
            return .transportFailure(String(describing: error))
        }
        var reason: String?
        if response.status != 200,
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        {
            reason = object["reason"] as? String
        }
        if reason == "ExpiredProviderToken", let tokenIssuedAt {
            let current = now()
            tokens.withLock { _ = $0.clock.rejectedAsExpired(tokenIssuedAt: tokenIssuedAt, now: current) }
        }
        return .response(status: response.status, reason: reason, apnsID: response.headerValue("apns-id"))
    }

    /// The shared provider token, minted when the clock says so.
    private func providerToken(teamID: String, keyID: String, key: ES256PrivateKey) throws -> (String, Date) {
        let current = now()
        return try tokens.withLock { state in
            if state.current == nil || state.clock.needsNewToken(now: current) {
                let issued = Date(timeIntervalSince1970: current.timeIntervalSince1970.rounded(.down))
                state.current = try JWT.apnsProviderToken(
                    teamID: teamID, keyID: keyID, issuedAt: Int64(issued.timeIntervalSince1970), key: key)
                state.clock.minted(at: issued)
            }
            return (state.current!, state.clock.issuedAt!)
        }
    }

    /// Closes the connections.
    public func shutdown() async {
        await production.shutdown()
        await sandbox.shutdown()
    }
}
