import Testing
@testable import SwitchboardNetSim

@Suite("switchboard-dev proxy command", .timeLimit(.minutes(3)))
struct ProxyCommandTests {
    typealias Options = ProxyCommand.Options

    @Test(arguments: [
        [],
        ["--profile", "good"],
        ["--upstream", "127.0.0.1:8080"],
        ["--upstream"],
        ["--upstream", "--profile", "good"],
        ["--upstream", "example.com:80", "--profile", "good"],
        ["--upstream", "127.0.0.1:0", "--profile", "good"],
        ["--upstream", "127.0.0.1:8080", "--profile", "lte"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good,poor_3g"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good", "--seed", "-1"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good", "--seed", "x"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good", "--listen", "0.0.0.0:9000"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good", "--listen", "127.0.0.1:70000"],
        ["--upstream", "127.0.0.1:8080", "--profile", "good", "--verbose"],
        ["127.0.0.1:8080"],
    ])
    func badUsageExitsWithTwo(arguments: [String]) {
        #expect(ProxyCommand.run(arguments) == 2)
    }

    @Test func errorsSayWhatIsWrong() {
        func message(_ arguments: [String]) -> String {
            do {
                _ = try Options(parsing: arguments)
                return "parsed"
            } catch {
                return error.message
            }
        }
        #expect(message(["--profile", "good"]) == "--upstream HOST:PORT is required")
        #expect(message(["--upstream", "127.0.0.1:1"]).hasPrefix("--profile NAME is required; known profiles: good"))
        #expect(
            message(["--upstream", "127.0.0.1:1", "--profile", "lte"]).contains(
                "unknown network profile 'lte'; known profiles: good, poor_4g, poor_3g"))
        #expect(message(["--upstream", "db:5432", "--profile", "good"]).contains("must be an IPv4 address"))
        #expect(
            message(["--upstream", "127.0.0.1:1", "--profile", "good", "--listen", "0.0.0.0:0"]).contains(
                "--allow-non-loopback"))
        #expect(
            message(["--upstream", "127.0.0.1:1", "--profile", "good", "--frobnicate"])
                == "unknown option '--frobnicate'")
    }

    @Test func defaultsAndEveryOption() throws {
        let defaults = try Options(parsing: ["--upstream", "localhost:8080", "--profile", "poor_3g"])
        #expect(defaults.upstream == .loopback(port: 8080))
        #expect(defaults.listen == .loopback(port: 0))
        #expect(defaults.profile == .poor3G)
        #expect(defaults.seed == 1)
        let every = try Options(parsing: [
            "--upstream=127.0.0.1:9", "--profile=wifi_50_loss", "--listen=0.0.0.0:7000", "--seed",
            "18446744073709551615",
            "--allow-non-loopback",
        ])
        #expect(every.listen == IPv4Endpoint(host: "0.0.0.0", port: 7000))
        #expect(every.seed == UInt64.max)
        #expect(every.profile == .wifi50Loss)
        #expect(every.configuration(diagnostics: { _ in }).allowNonLoopbackListen)
        // --delay-only: the profile's delays without its loss and resets.
        let delays = try Options(parsing: ["--upstream", "127.0.0.1:9", "--profile", "wifi_50_loss", "--delay-only"])
        #expect(delays.profile.uplink.latency == NetworkProfile.wifi50Loss.uplink.latency)
        #expect(delays.profile.downlink.bytesPerSecond == NetworkProfile.wifi50Loss.downlink.bytesPerSecond)
        #expect(delays.profile.downlink.jitter == NetworkProfile.wifi50Loss.downlink.jitter)
        #expect(
            delays.profile.uplink.loss == .none && delays.profile.downlink.loss == .none
                && delays.profile.resets == .none)
        #expect(delays.profile.name == "wifi_50_loss")
    }

    @Test func helpNamesEveryFlagAndProfile() {
        for needle in [
            "--upstream", "--listen", "--profile", "--seed", "--delay-only", "--allow-non-loopback",
            "listening on 127.0.0.1:PORT profile NAME",
        ]
            + NetworkProfile.all.map(\.name)
        {
            #expect(ProxyCommand.help.contains(needle), "\(needle)")
        }
        #expect(ProxyCommand.run(["--help"]) == 0)
    }
}
