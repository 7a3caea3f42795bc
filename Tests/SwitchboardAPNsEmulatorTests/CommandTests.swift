import Foundation
import SwitchboardCrypto
import Testing

@testable import SwitchboardAPNsEmulator
import SwitchboardCLI

/// `switchboard-dev apns-emulator` option parsing (the signal-driven `run(_:)` itself is exercised
/// by the CLI's own process tests once it is wired in).
@Suite(.timeLimit(.minutes(3))) struct CommandTests {
    typealias Options = APNsEmulatorCommand.Options

    @Test func parsesEveryOption() throws {
        let options = try Options(parsing: [
            "--listen", "0.0.0.0:0", "--bundle-id", "com.example.app", "--team-id", "DEF123GHIJ", "--key-id",
            "ABC123DEFG", "--public-key", "key.pem", "--faults", "faults.json", "--tls", "--ca-out", "ca.pem",
            "--max-concurrent-streams=10", "--inbox-capacity", "5", "--verbose",
        ])
        #expect(options.host == "0.0.0.0")
        #expect(options.port == 0)
        #expect(options.bundleID == "com.example.app")
        #expect(options.teamID == "DEF123GHIJ")
        #expect(options.keyID == "ABC123DEFG")
        #expect(options.publicKeyFile == "key.pem")
        #expect(options.faultsFile == "faults.json")
        #expect(options.tls && options.verbose)
        #expect(options.caOut == "ca.pem")
        #expect(options.maxConcurrentStreams == 10)
        #expect(options.inboxCapacity == 5)
    }

    @Test(arguments: [
        ("127.0.0.1:2197", "127.0.0.1", 2197), ("[::1]:0", "::1", 0), (":9000", "127.0.0.1", 9000),
        ("localhost:1", "localhost", 1),
    ])
    func parsesListenAddresses(text: String, host: String, port: Int) throws {
        let (parsedHost, parsedPort) = try Options.hostAndPort(text)
        #expect(parsedHost == host)
        #expect(parsedPort == port)
    }

    @Test(arguments: [
        (["--listen", "nowhere"], "HOST:PORT"), (["--listen", "1.2.3.4:70000"], "0...65535"),
        (["--bundle-id"], "needs a value"), (["--max-concurrent-streams", "0"], "positive integer"),
        (["--ca-out", "x.pem"], "needs --tls"), (["--frobnicate"], "unknown option"),
    ])
    func rejectsBadUsage(arguments: [String], mention: String) {
        #expect {
            try Options(parsing: arguments)
        } throws: { error in
            (error as? UsageError)?.message.contains(mention) == true
        }
    }

    @Test func readsThePublicKeyAndFaultFilesIntoTheConfiguration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apns-emulator-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.pem").path
        let faultsFile = directory.appendingPathComponent("faults.json").path
        try Fixture.key.publicKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try #"{"faults":[{"kind":"refuseStream","count":1}]}"#.write(
            toFile: faultsFile, atomically: true, encoding: .utf8)

        let configuration = try Options(parsing: ["--public-key", keyFile, "--faults", faultsFile, "--tls"])
            .configuration()
        #expect(configuration.publicKey?.pem == Fixture.key.publicKeyPEM)
        #expect(configuration.faults == [APNsFault(.refuseStream, count: 1)])
        #expect(configuration.tls == APNsEmulatorTLS())

        try #"{"faults":[{"kind":"later"}]}"#.write(toFile: faultsFile, atomically: true, encoding: .utf8)
        #expect {
            try Options(parsing: ["--faults", faultsFile]).configuration()
        } throws: { error in
            "\(error)".contains("faults.json: fault 0: unknown kind")
        }
    }

    @Test func theHelpDocumentsTheEndpointsAndTheUnsignedMode() {
        for needle in [
            "--public-key FILE", "the signature is NOT", "GET /inbox/<token>?after=N&wait=S", "POST /control/faults",
            "DELETE /control/faults", "GET /control/stats", "goawayAfter", "refuseStream", "BadPayload",
            "--ca-out FILE",
        ] {
            #expect(APNsEmulatorCommand.help.contains(needle), "\(needle)")
        }
    }
}
