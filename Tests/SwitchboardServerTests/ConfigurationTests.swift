import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer

@Suite("Configuration", .timeLimit(.minutes(3)))
struct ConfigurationTests {
    private func file(_ json: String) -> (path: String, contents: Data) { ("test.json", Data(json.utf8)) }

    @Test func embeddedDefaults() throws {
        let configuration = try ServerConfiguration.resolve(flags: [:], environment: [:], file: nil)
        #expect(configuration.listen == SocketAddress(host: "127.0.0.1", port: 8080))
        #expect(configuration.dataDirectory == "./var")
        #expect(configuration.logLevel == .info)
        #expect(configuration.maxBodyBytes == 1 << 20)
        #expect(configuration.maxHeaderBytes == 16 * 1024)
    }

    @Test func flagsBeatEnvironmentWhichBeatsTheFile() throws {
        let json = file(#"{"listen": "127.0.0.1:1000", "dataDir": "/from/file", "logLevel": "error", "maxBodyBytes": 2048}"#)
        let environment = ["SWITCHBOARD_LISTEN": "127.0.0.1:2000", "SWITCHBOARD_DATA_DIR": "/from/env"]
        let flags = ["--listen": "127.0.0.1:0"]
        let configuration = try ServerConfiguration.resolve(flags: flags, environment: environment, file: json)
        #expect(configuration.listen.port == 0)
        #expect(configuration.dataDirectory == "/from/env")
        #expect(configuration.logLevel == .error)
        #expect(configuration.maxBodyBytes == 2048)
    }

    @Test func ipv6ListenAddress() throws {
        let configuration = try ServerConfiguration.resolve(flags: ["--listen": "[::1]:9000"], environment: [:], file: nil)
        #expect(configuration.listen == SocketAddress(host: "::1", port: 9000))
        #expect(configuration.listen.description == "[::1]:9000")
    }

    @Test(arguments: [
        (["--listen": "localhost"], "--listen must be HOST:PORT"),
        (["--listen": "127.0.0.1:70000"], "--listen must be HOST:PORT"),
        (["--log-level": "loud"], "--log-level must be debug, info, warning or error"),
        (["--data-dir": ""], "--data-dir must not be empty"),
    ])
    func badFlagsNameTheSetting(flags: [String: String], message: String) {
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(flags: flags, environment: [:], file: nil) }
        do {
            _ = try ServerConfiguration.resolve(flags: flags, environment: [:], file: nil)
        } catch {
            #expect(error.message.hasPrefix(message))
        }
    }

    @Test func badEnvironmentValueNamesTheVariable() {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: ["SWITCHBOARD_MAX_BODY_BYTES": "lots"], file: nil)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.hasPrefix("SWITCHBOARD_MAX_BODY_BYTES must be an integer"))
        }
    }

    @Test(arguments: [
        (#"{"lisen": "127.0.0.1:1"}"#, "test.json: unknown setting 'lisen'"),
        (#"["listen"]"#, "test.json: must be a JSON object of strings and numbers"),
        (#"{"listen": true}"#, "test.json: must be a JSON object of strings and numbers"),
        (#"{"maxConnections": 0}"#, "test.json: 'maxConnections' must be an integer from 1 to 1000000"),
        (#"{"headerTimeoutSeconds": 1.5}"#, "test.json: 'headerTimeoutSeconds' must be an integer from 1 to 3600"),
        ("not json", "test.json: must be a JSON object of strings and numbers"),
    ])
    func badFileIsRefusedWithAClearMessage(json: String, message: String) {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: [:], file: file(json))
            Issue.record("expected an error for \(json)")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func everySettingHasAUniqueKeyAndVariable() {
        let settings = ConfigurationSetting.all
        #expect(Set(settings.map(\.key)).count == settings.count)
        #expect(Set(settings.map(\.environment)).count == settings.count)
        #expect(settings.allSatisfy { $0.environment.hasPrefix("SWITCHBOARD_") })
    }

    @Test func httpConfigurationCarriesTheLimits() throws {
        let configuration = try ServerConfiguration.resolve(
            flags: [:], environment: ["SWITCHBOARD_MAX_HEADER_BYTES": "4096", "SWITCHBOARD_LOOP_THREADS": "3"], file: nil)
        let http = configuration.httpConfiguration(errorResponder: HTTPServerConfiguration.jsonErrorEnvelope)
        #expect(http.limits.maxHeaderBytes == 4096)
        #expect(http.loopCount == 3)
    }

    @Test func flagParsing() throws {
        let flags = try CommandLineInterface.parseFlags(["--listen", "127.0.0.1:1", "--data-dir=/x"], known: ["--listen", "--data-dir"])
        #expect(flags == ["--listen": "127.0.0.1:1", "--data-dir": "/x"])
        #expect(throws: CommandLineInterface.UsageError.self) { try CommandLineInterface.parseFlags(["--bogus", "1"], known: ["--listen"]) }
        #expect(throws: CommandLineInterface.UsageError.self) { try CommandLineInterface.parseFlags(["--listen"], known: ["--listen"]) }
    }

    @Test(arguments: [
        ("SWITCHBOARD_LIVEKIT_URL", "http://media.example", "SWITCHBOARD_LIVEKIT_URL must be a ws:// or wss:// URL"),
        ("SWITCHBOARD_MEDIA_BACKEND", "janus", "SWITCHBOARD_MEDIA_BACKEND must be none or livekit"),
        ("SWITCHBOARD_APNS_BUNDLE_ID", "com.example.app.voip", "SWITCHBOARD_APNS_BUNDLE_ID must be the bundle id, without .voip"),
        ("SWITCHBOARD_APNS_PRODUCTION_URL", "ftp://x", "SWITCHBOARD_APNS_PRODUCTION_URL must be an http(s):// URL"),
        ("SWITCHBOARD_ADMIN_KEY", "short", "SWITCHBOARD_ADMIN_KEY must be at least 16 characters"),
    ])
    func badTextSettingsAreRefused(variable: String, value: String, message: String) {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: [variable: value], file: nil)
            Issue.record("expected an error for \(variable)=\(value)")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func goodTextSettingsAreApplied() throws {
        let configuration = try ServerConfiguration.resolve(flags: [:], environment: [
            "SWITCHBOARD_LIVEKIT_URL": "wss://media.example", "SWITCHBOARD_APNS_TEAM_ID": "TEAM123456",
            "SWITCHBOARD_ADMIN_KEY": "0123456789abcdef", "SWITCHBOARD_MEDIA_BACKEND": "livekit",
        ], file: nil)
        #expect(configuration.livekitURL == "wss://media.example" && configuration.apnsTeamID == "TEAM123456")
        #expect(configuration.adminKey == "0123456789abcdef" && configuration.mediaBackend == "livekit")
    }
}
