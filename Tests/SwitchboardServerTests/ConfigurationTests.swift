import Foundation
import SwitchboardCore
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardCLI

@Suite("Configuration", .timeLimit(.minutes(3)))
struct ConfigurationTests {
    private func file(_ json: String) -> (path: String, contents: Data) { ("test.json", Data(json.utf8)) }

    @Test func embeddedDefaults() throws {
        let configuration = try ServerConfiguration.resolve(flags: [:], environment: [:], file: nil)
        #expect(configuration.http.listen == SocketAddress(host: "127.0.0.1", port: 8080))
        #expect(configuration.store.dataDirectory == "./var")
        #expect(configuration.logLevel == .info)
        #expect(configuration.http.maxBodyBytes == 1 << 20)
        #expect(configuration.http.maxHeaderBytes == 16 * 1024)
    }

    @Test func flagsBeatEnvironmentWhichBeatsTheFile() throws {
        let json = file(
            #"{"listen": "127.0.0.1:1000", "dataDir": "/from/file", "logLevel": "error", "maxBodyBytes": 2048}"#)
        let environment = ["SWITCHBOARD_LISTEN": "127.0.0.1:2000", "SWITCHBOARD_DATA_DIR": "/from/env"]
        let flags = ["--listen": "127.0.0.1:0"]
        let configuration = try ServerConfiguration.resolve(flags: flags, environment: environment, file: json)
        #expect(configuration.http.listen.port == 0)
        #expect(configuration.store.dataDirectory == "/from/env")
        #expect(configuration.logLevel == .error)
        #expect(configuration.http.maxBodyBytes == 2048)
    }

    @Test func ipv6ListenAddress() throws {
        let configuration = try ServerConfiguration.resolve(
            flags: ["--listen": "[::1]:9000"], environment: [:], file: nil)
        #expect(configuration.http.listen == SocketAddress(host: "::1", port: 9000))
        #expect(configuration.http.listen.description == "[::1]:9000")
    }

    @Test(arguments: [
        (["--listen": "localhost"], "--listen must be HOST:PORT"),
        (["--listen": "127.0.0.1:70000"], "--listen must be HOST:PORT"),
        (["--log-level": "loud"], "--log-level must be debug, info, warning or error"),
        (["--data-dir": ""], "--data-dir must not be empty"),
    ])
    func badFlagsNameTheSetting(flags: [String: String], message: String) {
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.resolve(flags: flags, environment: [:], file: nil)
        }
        do {
            _ = try ServerConfiguration.resolve(flags: flags, environment: [:], file: nil)
        } catch {
            #expect(error.message.hasPrefix(message))
        }
    }

    @Test func badEnvironmentValueNamesTheVariable() {
        do {
            _ = try ServerConfiguration.resolve(
                flags: [:], environment: ["SWITCHBOARD_MAX_BODY_BYTES": "lots"], file: nil)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.hasPrefix("SWITCHBOARD_MAX_BODY_BYTES must be an integer"))
        }
    }

    @Test(arguments: [
        (
            #"{"lisen": "127.0.0.1:1"}"#,
            "test.json: line 1, column 11: unknown setting 'lisen' (did you mean 'listen'?)"
        ),
        (
            #"["listen"]"#,
            #"test.json: line 1, column 1: the file must be one JSON object ({"key": value, …}), found '['"#
        ),
        (
            #"{"listen": true}"#,
            "test.json: line 1, column 12: 'listen' must be a string in double quotes, not a boolean"
        ),
        (
            #"{"maxConnections": 0}"#,
            "test.json: line 1, column 20: 'maxConnections' must be an integer from 1 to 1000000"
        ),
        (
            #"{"headerTimeoutSeconds": 1.5}"#,
            "test.json: line 1, column 26: 'headerTimeoutSeconds' must be an integer, not a non-integer number"
        ),
        ("not json", #"test.json: line 1, column 1: the file must be one JSON object ({"key": value, …}), found 'n'"#),
        // Strict JSON: a trailing comma, a missing brace, a duplicate key, a comment.
        (
            "{\"listen\": \"127.0.0.1:1\",\n}",
            "test.json: line 2, column 1: expected a key in double quotes, found '}' (a comma after the last entry is not allowed)"
        ),
        (
            "{\"listen\": \"127.0.0.1:1\"",
            "test.json: line 1, column 25: expected ',' or '}' after a value, found the end of the file"
        ),
        (
            "{\n  \"ringTimeoutSeconds\": 30\n  \"logLevel\": \"info\"\n}",
            "test.json: line 3, column 3: expected ',' or '}' after a value, found '\"'"
        ),
        (#"{"logLevel": "info", "logLevel": "debug"}"#, "test.json: line 1, column 22: duplicate key 'logLevel'"),
        ("{ // note\n}", "test.json: line 1, column 3: expected a key in double quotes, found '/'"),
        (
            #"{"listen": "127.0.0.1:1"} x"#,
            "test.json: line 1, column 27: expected the end of the file after the object, found 'x'"
        ),
        // Typed values: a quoted number is a string, a number is not a string.
        (
            #"{"ringTimeoutSeconds": "30"}"#,
            "test.json: line 1, column 24: 'ringTimeoutSeconds' must be an integer, not a string: write 30 without quotes"
        ),
        (
            #"{"apnsTeamID": 1234567890}"#,
            "test.json: line 1, column 16: 'apnsTeamID' must be a string in double quotes, not an integer"
        ),
        (
            #"{"adminKey": null}"#,
            "test.json: line 1, column 14: 'adminKey' must be a string in double quotes, not null"
        ),
        (
            #"{"listen": {"host": "a"}}"#,
            "test.json: line 1, column 12: 'listen' must be a string in double quotes, not an object"
        ),
        (
            "{\"dataDir\": \"a\tb\"}",
            "test.json: line 1, column 15: a control character must be escaped inside a string (a line break is \\n)"
        ),
    ])
    func badFileIsRefusedWithAClearMessage(json: String, message: String) {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: [:], file: file(json))
            Issue.record("expected an error for \(json)")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func aStrictFileWithEscapesAndUnicodeIsRead() throws {
        let json =
            "\u{FEFF}{\n\t\"dataDir\": \"/srv/sw\\u00e9\\ud83d\\ude00\\/x\",\r\n \"ringTimeoutSeconds\": 30, \"logLevel\":\"debug\"}\n"
        let configuration = try ServerConfiguration.resolve(flags: [:], environment: [:], file: file(json))
        #expect(configuration.store.dataDirectory == "/srv/swé😀/x")
        #expect(configuration.calls.ringTimeoutSeconds == 30)
        #expect(configuration.logLevel == .debug)
        #expect(
            try ServerConfiguration.resolve(flags: [:], environment: [:], file: file("{}")) == ServerConfiguration())
    }

    @Test func columnsCountCharactersNotBytes() {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: [:], file: file(#"{"dataDir": "é", "x": 1}"#))
            Issue.record("expected an error")
        } catch {
            // "é" is two bytes and one column: the value 1 starts at column 23.
            #expect(error.message.hasPrefix("test.json: line 1, column 23: unknown setting 'x'"))
        }
    }

    @Test func unknownSwitchboardVariablesAreNamedWithTheClosestKnownOne() {
        let warnings = ServerConfiguration.unknownEnvironmentWarnings([
            "SWITCHBOARD_APNS_TEAMID": "x", "SWITCHBOARD_RING_TIMEOUT": "5", "SWITCHBOARD_LISTEN": "127.0.0.1:0",
            "SWITCHBOARD_CONFIG": "a.json", "HOME": "/root", "SWITCHBOARDX": "1",
        ])
        #expect(
            warnings == [
                "unknown environment variable SWITCHBOARD_APNS_TEAMID is ignored (did you mean SWITCHBOARD_APNS_TEAM_ID?)",
                "unknown environment variable SWITCHBOARD_RING_TIMEOUT is ignored (did you mean SWITCHBOARD_RING_TIMEOUT_SECONDS?)",
            ])
        #expect(ServerConfiguration.unknownEnvironmentWarnings(["SWITCHBOARD_LOG_LEVEL": "debug"]).isEmpty)
    }

    @Test func everySettingHasAUniqueKeyAndVariable() {
        let settings = ConfigurationSetting.all
        #expect(Set(settings.map(\.key)).count == settings.count)
        #expect(Set(settings.map(\.environment)).count == settings.count)
        #expect(settings.allSatisfy { $0.environment.hasPrefix("SWITCHBOARD_") })
    }

    @Test func httpConfigurationCarriesTheLimits() throws {
        let configuration = try ServerConfiguration.resolve(
            flags: [:], environment: ["SWITCHBOARD_MAX_HEADER_BYTES": "4096", "SWITCHBOARD_LOOP_THREADS": "3"],
            file: nil)
        let http = configuration.httpConfiguration(errorResponder: HTTPServerConfiguration.jsonErrorEnvelope)
        #expect(http.limits.maxHeaderBytes == 4096)
        #expect(http.loopCount == 3)
    }

    @Test func flagParsing() throws {
        let flags = try CommandLineInterface.parseFlags(
            ["--listen", "127.0.0.1:1", "--data-dir=/x"], known: ["--listen", "--data-dir"])
        #expect(flags == ["--listen": "127.0.0.1:1", "--data-dir": "/x"])
        #expect(throws: UsageError.self) { try CommandLineInterface.parseFlags(["--bogus", "1"], known: ["--listen"]) }
        #expect(throws: UsageError.self) { try CommandLineInterface.parseFlags(["--listen"], known: ["--listen"]) }
    }

    @Test(arguments: [
        ("SWITCHBOARD_LIVEKIT_URL", "http://media.example", "SWITCHBOARD_LIVEKIT_URL must be a ws:// or wss:// URL"),
        ("SWITCHBOARD_MEDIA_BACKEND", "janus", "SWITCHBOARD_MEDIA_BACKEND must be relay, livekit or none"),
        (
            "SWITCHBOARD_APNS_BUNDLE_ID", "com.example.app.voip",
            "SWITCHBOARD_APNS_BUNDLE_ID must be the bundle id, without .voip"
        ),
        ("SWITCHBOARD_APNS_PRODUCTION_URL", "ftp://x", "SWITCHBOARD_APNS_PRODUCTION_URL must be an http(s):// URL"),
        ("SWITCHBOARD_ADMIN_KEY", "short", "SWITCHBOARD_ADMIN_KEY must be at least 16 characters"),
        ("SWITCHBOARD_DATABASE", "mysql", "SWITCHBOARD_DATABASE must be sqlite or postgres"),
        ("SWITCHBOARD_POSTGRES_URL", "", "SWITCHBOARD_POSTGRES_URL must not be empty"),
    ])
    func badTextSettingsAreRefused(variable: String, value: String, message: String) {
        do {
            _ = try ServerConfiguration.resolve(flags: [:], environment: [variable: value], file: nil)
            Issue.record("expected an error for \(variable)=\(value)")
        } catch {
            #expect(error.message == message)
        }
    }

    /// The unsafe defaults of wave 2 are gone or refused: LiveKit's public dev secret with a
    /// LiveKit elsewhere stops the start naming the setting; push URLs take http:// only to this
    /// machine; nobody's X-Forwarded-For is trusted; scrypt is 2^17 and at least 2^15; limits
    /// are COUNT/SECONDS.
    @Test func safeDefaultsAndTheirRefusals() throws {
        let defaults = ServerConfiguration()
        #expect(
            defaults.http.trustedProxies.isEmpty && defaults.accounts.passwordScryptLogN == 17
                && defaults.gateway.signatureV1 == .refuse)
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.resolve(
                flags: [:],
                environment: [
                    "SWITCHBOARD_MEDIA_BACKEND": "livekit", "SWITCHBOARD_LIVEKIT_URL": "wss://media.example",
                ], file: nil)
        }
        do {
            _ = try ServerConfiguration.resolve(
                flags: [:],
                environment: [
                    "SWITCHBOARD_MEDIA_BACKEND": "livekit", "SWITCHBOARD_LIVEKIT_URL": "wss://media.example",
                ], file: nil)
        } catch { #expect(error.message.contains("livekitAPISecret (SWITCHBOARD_LIVEKIT_API_SECRET)")) }
        // On this machine the dev server's secret is fine.
        _ = try ServerConfiguration.resolve(
            flags: [:], environment: ["SWITCHBOARD_MEDIA_BACKEND": "livekit"], file: nil)
        for (variable, value) in [
            ("SWITCHBOARD_APNS_PRODUCTION_URL", "http://push.example"), ("SWITCHBOARD_FCM_URL", "http://fcm.example"),
            ("SWITCHBOARD_PASSWORD_SCRYPT_LOG_N", "14"), ("SWITCHBOARD_LIMIT_CALLS_PER_CALLER", "30"),
            ("SWITCHBOARD_LIMIT_RINGS_PER_DEVICE", "0/60"), ("SWITCHBOARD_GATEWAY_SIGNATURE_V1", "maybe"),
        ] {
            #expect(throws: ConfigurationError.self, "\(variable)=\(value)") {
                try ServerConfiguration.resolve(flags: [:], environment: [variable: value], file: nil)
            }
        }
        let set = try ServerConfiguration.resolve(
            flags: [:],
            environment: [
                "SWITCHBOARD_APNS_PRODUCTION_URL": "http://127.0.0.1:9443",
                "SWITCHBOARD_LIMIT_RINGS_PER_DEVICE": "3/30",
                "SWITCHBOARD_LIMIT_DEVICE_CUT_OFF_SECONDS": "120",
            ], file: nil)
        #expect(set.limits.ringsPerDevice == RateLimit(count: 3, windowMS: 30_000, breakerMS: 120_000))
    }

    @Test func goodTextSettingsAreApplied() throws {
        let configuration = try ServerConfiguration.resolve(
            flags: [:],
            environment: [
                "SWITCHBOARD_LIVEKIT_URL": "wss://media.example", "SWITCHBOARD_APNS_TEAM_ID": "TEAM123456",
                "SWITCHBOARD_ADMIN_KEY": "0123456789abcdef", "SWITCHBOARD_MEDIA_BACKEND": "livekit",
                "SWITCHBOARD_LIVEKIT_API_SECRET": "a-real-secret",
            ], file: nil)
        #expect(
            configuration.media.livekit.url == "wss://media.example" && configuration.push.apns.teamID == "TEAM123456")
        #expect(configuration.adminKey == "0123456789abcdef" && configuration.media.backend == .livekit)
        let postgres = try ServerConfiguration.resolve(
            flags: [:],
            environment: [
                "SWITCHBOARD_DATABASE": "postgres", "SWITCHBOARD_POSTGRES_URL": "postgresql://app:pw@db/sb",
            ], file: nil)
        #expect(postgres.store.choice == .postgres(url: "postgresql://app:pw@db/sb"))
        #expect(
            ServerConfiguration().store.choice == .sqlite(directory: "./var"), "the embedded store stays the default")
    }
}
