import Testing
@testable import SwitchboardNetSim

@Suite("Network profiles", .timeLimit(.minutes(3)))
struct NetworkProfileTests {
    static let names = ["good", "poor_3g", "poor_4g", "wifi_30_loss", "wifi_50_loss"]

    @Test(arguments: names)
    func eachNamedProfileExistsIsValidAndParses(name: String) throws {
        let profile = try #require(NetworkProfile.named(name))
        #expect(profile.name == name)
        try profile.validate()
        #expect(try NetworkProfile.parseList(name) == [profile])
    }

    @Test func allHoldsExactlyTheNamedProfiles() {
        #expect(Set(NetworkProfile.all.map(\.name)) == Set(Self.names))
        #expect(NetworkProfile.all.count == Self.names.count)
    }

    @Test func theProfilesGetWorseInTheWayTheirNamesSay() {
        let good = NetworkProfile.good, poor4G = NetworkProfile.poor4G, poor3G = NetworkProfile.poor3G
        #expect(good.downlink.latency < poor4G.downlink.latency)
        #expect(poor4G.downlink.latency < poor3G.downlink.latency)
        #expect(poor3G.downlink.bytesPerSecond! < poor4G.downlink.bytesPerSecond!)
        #expect(good.downlink.loss == .none && good.uplink.loss == .none && good.resets == .none)
        #expect(NetworkProfile.wifi30Loss.downlink.loss.probability == 0.3)
        #expect(NetworkProfile.wifi50Loss.downlink.loss.probability == 0.5)
        #expect(NetworkProfile.wifi50Loss.uplink.loss.probability == 0.5)
    }

    @Test func aListParsesInOrderAndIgnoresSpaces() throws {
        #expect(try NetworkProfile.parseList("good,poor_3g") == [.good, .poor3G])
        #expect(try NetworkProfile.parseList(" wifi_50_loss , good ") == [.wifi50Loss, .good])
    }

    @Test func anUnknownNameIsNamedInTheErrorWithTheKnownOnes() {
        do {
            _ = try NetworkProfile.parseList("good,lte")
            Issue.record("parsed an unknown name")
        } catch {
            #expect(error.code == .unknownProfile)
            #expect(error.message.contains("'lte'"))
            #expect(Self.names.allSatisfy { error.message.contains($0) })
        }
        #expect(NetworkProfile.named("GOOD") == nil)
    }

    @Test(arguments: ["", "good,,poor_3g", "good,"])
    func emptyNamesAreRejected(text: String) {
        #expect(throws: NetSimError.self) { try NetworkProfile.parseList(text) }
        #expect((try? NetworkProfile.parseList(text)) == nil)
    }

    @Test(arguments: [
        "negative latency", "negative jitter", "zero bandwidth", "certain loss", "empty segments", "zero timeout",
        "cap below start", "reset probability", "negative reset delay", "no name",
    ])
    func outOfRangeNumbersAreRejected(problem: String) {
        var profile = NetworkProfile.poor4G
        switch problem {
        case "negative latency": profile.uplink.latency = .milliseconds(-1)
        case "negative jitter": profile.downlink.jitter = .milliseconds(-1)
        case "zero bandwidth": profile.downlink.bytesPerSecond = 0
        case "certain loss": profile.uplink.loss.probability = 1
        case "empty segments": profile.uplink.loss.segmentBytes = 0
        case "zero timeout": profile.downlink.loss.initialTimeout = .zero
        case "cap below start": profile.downlink.loss.maximumTimeout = .milliseconds(100)
        case "reset probability": profile.resets.probability = 1.5
        case "negative reset delay": profile.resets.meanDelay = .seconds(-1)
        default: profile.name = ""
        }
        do {
            try profile.validate()
            Issue.record("accepted a profile with \(problem)")
        } catch {
            #expect(error.code == .invalidProfile)
            #expect(error.message.hasPrefix("network profile"))
        }
    }
}

@Suite("Addresses", .timeLimit(.minutes(3)))
struct IPv4EndpointTests {
    @Test func parsesHostAndPort() throws {
        #expect(try IPv4Endpoint.parse("127.0.0.1:8080") == IPv4Endpoint(host: "127.0.0.1", port: 8080))
        #expect(try IPv4Endpoint.parse("localhost:80") == .loopback(port: 80))
        #expect(try IPv4Endpoint.parse(":0") == .loopback(port: 0))
        #expect(try IPv4Endpoint.parse("10.1.2.3:1").isLoopback == false)
        #expect(try IPv4Endpoint.parse("127.9.9.9:1").isLoopback)
    }

    @Test(arguments: ["example.com:80", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:x", "[::1]:80", "1.2.3:80"])
    func rejectsWhatIsNotAnIPv4HostAndPort(text: String) {
        do {
            _ = try IPv4Endpoint.parse(text, role: "upstream")
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.code == .badAddress)
            #expect(error.message.hasPrefix("upstream '"))
        }
    }
}
