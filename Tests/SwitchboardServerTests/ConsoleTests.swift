import Foundation
import Testing
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardWire

/// What the operator console reads: `GET /admin/console` (live calls, calls per minute, ring to
/// answer, push latency), the gateway apps' list, and the pages themselves.
@Suite("The operator console's data and the browser pages", .serialized, .timeLimit(.minutes(3)))
struct ConsoleTests {
    static let adminKey = "console-admin-key-0123"

    private static func world() throws -> CallWorld {
        var configuration = ServerConfiguration()
        configuration.adminKey = adminKey
        return try CallWorld(configuration: configuration)
    }

    private static let admin: HTTPHeaders = ["Host": "t", "Authorization": "Bearer \(adminKey)"]

    @Test func theOverviewCountsCallsPerMinuteAndTimesEachAnswer() async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let first = try #require(await world.call(alice, "conversation", conversation).call)
        world.clock.advance(seconds: 3)
        #expect(await world.act("accept", first.id, by: bob).status == 200)
        var answer = await world.app.request("GET", "/admin/console?minutes=5", headers: Self.admin)
        #expect(answer.status == 200, "\(answer.text)")
        var json = try #require(answer.json)
        #expect((json["liveCalls"] as? [[String: Any]])?.first?["id"] as? String == first.id)
        let perMinute = try #require(json["callsPerMinute"] as? [Int])
        #expect(perMinute.count == 5 && perMinute.reduce(0, +) == 1)
        let answered = try #require(json["ringToAnswer"] as? [[String: Any]])
        #expect(answered.count == 1 && answered.first?["seconds"] as? Double == 3)
        // Over: it leaves the live calls; the next minute has its own bucket.
        #expect(await world.act("leave", first.id, by: bob).status == 200)
        world.clock.advance(seconds: 60)
        answer = await world.app.request("GET", "/admin/console?minutes=5", headers: Self.admin)
        json = try #require(answer.json)
        #expect((json["liveCalls"] as? [Any])?.isEmpty == true)
        #expect((json["callsPerMinute"] as? [Int])?.suffix(2) == [1, 0])
    }

    @Test func theOverviewAndTheAppsListNeedTheAdminKey() async throws {
        let world = try Self.world()
        defer { world.close() }
        for path in ["/admin/console", "/admin/gateway/apps"] {
            #expect(await world.app.request("GET", path, headers: ["Host": "t"]).status == 401)
            #expect(await world.app.request("GET", path, headers: Self.admin).status == 200)
        }
        let bad = await world.app.request("GET", "/admin/console?minutes=2", headers: Self.admin)
        #expect(bad.status == 400 && bad.errorCode == "VALIDATION_FAILED")
    }

    /// Pure: buckets by minute, answers and deliveries as samples.
    @Test func theOverviewFromGivenNumbers() {
        let now: Int64 = 1_800_000_000_000
        let overview = ConsoleRoutes.overview(
            minutes: 3, nowMS: now, live: [],
            timings: [
                CallTiming(callID: "a", createdAtMS: now - 150_000, answeredAtMS: nil),  // before the window
                CallTiming(callID: "b", createdAtMS: now - 100_000, answeredAtMS: now - 98_500),
                CallTiming(callID: "c", createdAtMS: now - 1_000, answeredAtMS: nil),
            ],
            deliveries: [(channel: "fcm", createdAtMS: now - 5_000, deliveredAtMS: now - 4_750)])
        let first = now / 60_000 - 2
        let expected = (0..<3).map { minute in
            [now - 100_000, now - 1_000].filter { $0 / 60_000 == first + Int64(minute) }.count
        }
        #expect(overview.callsPerMinute == expected && overview.callsPerMinute.reduce(0, +) == 2)
        #expect(overview.ringToAnswer.map(\.seconds) == [1.5])
        #expect(overview.pushLatency.map(\.seconds) == [0.25] && overview.pushLatency.first?.channel == "fcm")
    }

    /// The pages: served with the strict policy, revalidated by ETag, unknown files 404.
    @Test func thePagesComeWithTheirPolicyAndRevalidate() async throws {
        let world = try Self.world()
        defer { world.close() }
        for path in ["/app/", "/console/", "/sdk/switchboard.js", "/console/console.js"] {
            let page = await world.app.request("GET", path, headers: ["Host": "t"])
            #expect(page.status == 200, "\(path)")
            #expect(page.headers["Content-Security-Policy"]?.contains("script-src 'self'") == true)
            let etag = try #require(page.headers["ETag"])
            let again = await world.app.request("GET", path, headers: ["Host": "t", "If-None-Match": etag])
            #expect(again.status == 304 && again.bodyBytes.isEmpty, "\(path)")
        }
        #expect(await world.app.request("GET", "/app", headers: ["Host": "t"]).headers["Location"] == "/app/")
        #expect(await world.app.request("GET", "/sdk/nope.js", headers: ["Host": "t"]).status == 404)
        #expect(await world.app.request("GET", "/app/%2e%2e%2fopenapi.json", headers: ["Host": "t"]).status == 404)
    }
}
