import Foundation
import Testing
import SwitchboardCore
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer

@Suite("Login throttling: per account and address, per address, per account", .serialized, .timeLimit(.minutes(3)))
struct LoginThrottleTests {
    @Test func theRulesDoubleAfterTheFreeFailuresUpToTheirCap() {
        let rule = Backoff(free: 5, baseMS: 1000, capMS: 15 * 60_000)
        #expect((0...5).allSatisfy { rule.delayMS(afterFailures: $0) == 0 })
        #expect([6, 7, 8, 9].map(rule.delayMS(afterFailures:)) == [1000, 2000, 4000, 8000])
        #expect(rule.delayMS(afterFailures: 20) == 900_000 && rule.delayMS(afterFailures: 10_000) == 900_000)
        let throttle = LoginThrottle()
        let keys = throttle.keys(username: "ada", address: "192.0.2.7").map(\.text)
        #expect(keys.count == 3 && Set(keys).count == 3)
        #expect(
            throttle.keysReset(username: "ada", address: "192.0.2.7").count == 2,
            "a success keeps the address's own counter")
    }

    @Test func theClientAddressComesFromTrustedProxiesOnly() {
        func request(peer: String, forwarded: String?) -> HTTPRequest {
            var headers: HTTPHeaders = ["Host": "x"]
            if let forwarded { headers.add("X-Forwarded-For", forwarded) }
            var request = HTTPRequest(method: "POST", target: "/auth/login", headers: headers)
            request.remoteAddress = peer
            return request
        }
        let proxies: Set<String> = ["10.0.0.1", "::1"]
        #expect(
            ClientAddress.of(request(peer: "198.51.100.4:5555", forwarded: "203.0.113.9"), trusting: proxies)
                == "198.51.100.4",
            "a client's own X-Forwarded-For is ignored")
        #expect(
            ClientAddress.of(request(peer: "10.0.0.1:443", forwarded: "203.0.113.9"), trusting: proxies)
                == "203.0.113.9")
        #expect(
            ClientAddress.of(
                request(peer: "10.0.0.1:443", forwarded: "1.2.3.4, 203.0.113.9, 10.0.0.1"), trusting: proxies)
                == "203.0.113.9",
            "the nearest untrusted hop: what the client wrote itself comes first and is skipped")
        #expect(ClientAddress.of(request(peer: "[::1]:80", forwarded: nil), trusting: proxies) == "0:0:0:0::/64")
        // One spelling per address: a dual-stack listener's IPv4-mapped proxy is still trusted.
        #expect(
            ClientAddress.of(request(peer: "[::ffff:10.0.0.1]:443", forwarded: "203.0.113.9"), trusting: proxies)
                == "203.0.113.9")
        // IPv6 clients count by their /64.
        #expect(
            ClientAddress.of(request(peer: "10.0.0.1:443", forwarded: "2001:db8:1:2::abcd"), trusting: proxies)
                == "2001:db8:1:2::/64")
        #expect(
            ClientAddress.of(request(peer: "[2001:db8:1:2:aaaa::1]:1", forwarded: nil), trusting: proxies)
                == "2001:db8:1:2::/64")
    }

    struct World {
        let world: CallWorld
        func login(_ user: String, _ password: String, from address: String) async -> HTTPResponse {
            await world.app.request(
                "POST", "/auth/login", headers: ["Host": "test", "X-Forwarded-For": address],
                body: #"{"username":"\#(user)","password":"\#(password)"}"#)
        }

        init() throws {
            var configuration = ServerConfiguration()
            configuration.http.trustedProxies = ["in-process"]  // the tests' requests; X-Forwarded-For names the client
            world = try CallWorld(configuration: configuration)
        }
    }

    @Test func anAccountGuessedFromOneAddressBacksOffThereButNotElsewhereAndASuccessResetsIt() async throws {
        let env = try World()
        defer { env.world.close() }
        _ = try await env.world.person("ada")
        for _ in 0..<6 { #expect(await env.login("ada", "wrong password", from: "198.51.100.1").status == 401) }
        let held = await env.login("ada", "long enough", from: "198.51.100.1")
        #expect(held.status == 429 && held.headers["Retry-After"] == "1", "even the right password waits")
        #expect(String(decoding: held.bodyBytes, as: UTF8.self).contains(#""code":"RATE_LIMITED""#))
        #expect(
            await env.login("ada", "long enough", from: "203.0.113.5").status == 200,
            "her own phone elsewhere is not locked out")
        env.world.clock.advance(seconds: 1.1)
        #expect(await env.login("ada", "wrong password", from: "198.51.100.1").status == 401)
        #expect(await env.login("ada", "long enough", from: "198.51.100.1").headers["Retry-After"] == "2", "doubled")
        env.world.clock.advance(seconds: 2.1)
        #expect(await env.login("ada", "long enough", from: "198.51.100.1").status == 200)
        for _ in 0..<5 { #expect(await env.login("ada", "wrong password", from: "198.51.100.1").status == 401) }
        #expect(
            await env.login("ada", "long enough", from: "198.51.100.1").status == 200, "the success reset her counter")
    }

    @Test func oneAddressTryingManyAccountsIsHeldBackForAll() async throws {
        let env = try World()
        defer { env.world.close() }
        _ = try await env.world.person("bob")
        for index in 0..<21 { #expect(await env.login("user\(index)", "guess", from: "192.0.2.66").status == 401) }
        let held = await env.login("bob", "long enough", from: "192.0.2.66")
        #expect(held.status == 429 && held.headers["Retry-After"] == "1")
        #expect(await env.login("bob", "long enough", from: "192.0.2.67").status == 200)
    }

    @Test func guessesSentAtOnceAreCountedBeforeTheirPasswordsAreChecked() async throws {
        let env = try World()
        defer { env.world.close() }
        _ = try await env.world.person("dora")
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { await env.login("dora", "guess", from: "198.51.100.9").status } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(
            statuses.filter { $0 == 401 }.count <= 6,
            "at most the free five and the one that set the wait got to guess: \(statuses)")
        #expect(statuses.filter { $0 == 429 }.count >= 14)
    }

    @Test func anAddressThatLoggedInBeforeIsNotHeldBackByTheAccountWideCounter() async throws {
        let env = try World()
        defer { env.world.close() }
        _ = try await env.world.person("erin")
        #expect(await env.login("erin", "long enough", from: "192.0.2.10").status == 200)
        for index in 0..<60 { _ = await env.login("erin", "guess", from: "198.18.2.\(index)") }
        #expect(await env.login("erin", "long enough", from: "198.18.3.1").status == 429, "a new address waits")
        #expect(await env.login("erin", "long enough", from: "192.0.2.10").status == 200, "her own phone does not")
    }

    @Test func anAccountGuessedFromEverywhereWaitsBrieflyAtMost() async throws {
        let env = try World()
        defer { env.world.close() }
        _ = try await env.world.person("cyrus")
        for index in 0..<60 { _ = await env.login("cyrus", "guess", from: "198.18.0.\(index)") }
        let held = await env.login("cyrus", "long enough", from: "198.18.1.1")
        let wait = Int(held.headers["Retry-After"] ?? "") ?? 0
        #expect(held.status == 429 && (1...30).contains(wait), "the account-wide wait is capped at 30 s: \(wait)")
        env.world.clock.advance(seconds: 31)
        #expect(await env.login("cyrus", "long enough", from: "198.18.1.1").status == 200)
    }
}
