import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardPOSIX
import SwitchboardPushCore

// How the settings table builds its rows: one shape per kind of value, and the checks
// several settings share.
extension ConfigurationSetting {
    /// What is wrong with the URL of a service that gets a secret or an auth token in its
    /// requests: `https://`, or `http://` (h2c) only to this machine (an emulator).
    static func credentialURLProblem(_ text: String) -> String? {
        if text.hasPrefix("https://") { return nil }
        guard text.hasPrefix("http://") else { return "must be an http(s):// URL" }
        let host = URLComponents(string: text)?.host ?? ""
        return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
            ? nil
            : "may be http:// only on this machine (127.0.0.1, localhost): its requests carry the secret; use https://"
    }

    /// A push service's URL: see ``credentialURLProblem(_:)``.
    static func serviceURL(
        _ key: String, _ environment: String, _ help: String,
        _ field: any WritableKeyPath<ServerConfiguration, String> & Sendable
    ) -> ConfigurationSetting {
        text(key, environment, help, field) { credentialURLProblem($0) }
    }

    /// A push service's CA file, request deadline and (when the service takes several)
    /// connections: `<prefix>CAFile`, `<prefix>RequestTimeoutSeconds`, `<prefix>Connections`.
    static func connection(
        _ prefix: String, _ name: String,
        _ field: any WritableKeyPath<ServerConfiguration, PushServiceConnection> & Sendable,
        trusting: String, connections: (range: ClosedRange<Int>, help: String)?
    ) -> [ConfigurationSetting] {
        let variable = "SWITCHBOARD_\(prefix.uppercased())_"
        var settings = [
            ConfigurationSetting(
                key: "\(prefix)CAFile", environment: variable + "CA_FILE", flag: nil,
                help: "CA file to trust for \(trusting)"
            ) {
                $0[keyPath: field].caFile = $1
                return nil
            },
            integer(
                "\(prefix)RequestTimeoutSeconds", variable + "REQUEST_TIMEOUT_SECONDS", 1...60,
                "seconds one \(name) request may take before it is retried (default 10)"
            ) {
                $0[keyPath: field].requestTimeoutSeconds = $1
            },
        ]
        if let connections {
            settings.append(
                integer("\(prefix)Connections", variable + "CONNECTIONS", connections.range, connections.help) {
                    $0[keyPath: field].connections = $1
                })
        }
        return settings
    }

    /// The connections setting of a phone maker's service, which may answer over HTTP/1.1.
    static func makersConnections(_ name: String) -> (range: ClosedRange<Int>, help: String) {
        (1...32, "connections to \(name) (default 4; it may answer over HTTP/1.1, one request per connection)")
    }

    /// A maker's app id: up to 64 letters and digits, or empty.
    static func appIDProblem(_ text: String) -> String? {
        text.isEmpty
            || (text.utf8.count <= 64
                && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) })
            ? nil : "must be the app id: letters and digits"
    }

    /// An Android package name: dot-separated parts of letters, digits and `_`.
    static func androidName(_ text: String) -> Bool {
        text.utf8.count <= 255
            && text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                !part.isEmpty
                    && part.utf8.allSatisfy {
                        (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95
                    }
            }
    }

    /// A string setting; `check` returns a problem description, or nil when the text is fine.
    static func text(
        _ key: String, _ environment: String, _ help: String,
        _ field: any WritableKeyPath<ServerConfiguration, String> & Sendable,
        check: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> ConfigurationSetting {
        ConfigurationSetting(key: key, environment: environment, flag: nil, help: help) { config, text in
            if let problem = check(text) { return problem }
            config[keyPath: field] = text
            return nil
        }
    }

    /// A setting that names one case of `Choice` (`sqlite`, `postgres`).
    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ key: String, _ environment: String, _ help: String,
        _ field: any WritableKeyPath<ServerConfiguration, Choice> & Sendable
    ) -> ConfigurationSetting where Choice.RawValue == String {
        ConfigurationSetting(key: key, environment: environment, flag: nil, help: help) { config, text in
            guard let value = Choice(rawValue: text) else {
                let names = Choice.allCases.map(\.rawValue)
                return "must be \(names.dropLast().joined(separator: ", ")) or \(names.last ?? "")"
            }
            config[keyPath: field] = value
            return nil
        }
    }

    /// A limit of the one limiter as `COUNT/SECONDS`.
    static func limit(
        _ key: String, _ environment: String, _ what: String,
        _ field: any WritableKeyPath<ServerLimits, RateLimit> & Sendable
    ) -> ConfigurationSetting {
        let fallback = ServerLimits()[keyPath: field]
        return ConfigurationSetting(
            key: key, environment: environment, flag: nil,
            help: "\(what), as COUNT/SECONDS (default \(ServerLimits.text(fallback)))"
        ) { config, text in
            guard let parsed = ServerLimits.parse(text) else {
                return "must be COUNT/SECONDS, like \(ServerLimits.text(fallback)): 1 to 1000000 per 1 to 86400 seconds"
            }
            config.limits[keyPath: field].count = parsed.count
            config.limits[keyPath: field].windowMS = parsed.windowMS
            return nil
        }
    }

    static func integer(
        _ key: String, _ environment: String, _ range: ClosedRange<Int>, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, Int) -> Void
    ) -> ConfigurationSetting {
        ConfigurationSetting(key: key, environment: environment, flag: nil, help: help, kind: .integer) {
            config, text in
            guard let value = Int(text), range.contains(value) else {
                return "must be an integer from \(range.lowerBound) to \(range.upperBound)"
            }
            set(&config, value)
            return nil
        }
    }
}
