import Foundation
import Testing
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardPushCore

/// Tokens apps stopped registering are swept; each token shows what its service last said.
@Suite("Push token hygiene: the sweep and each token's last outcomes", .serialized, .timeLimit(.minutes(3)))
struct PushTokenHygieneTests {
    static let adminKey = "admin-key-0123456789"

    private static func world(provider: ScriptedPushProvider, maxAgeDays: Int = 270) throws -> CallWorld {
        var configuration = ServerConfiguration()
        configuration.push.apns.bundleID = "com.example.phone"
        configuration.adminKey = adminKey
        configuration.push.tokenMaxAgeDays = maxAgeDays
        return try CallWorld(configuration: configuration, apnsTransport: provider)
    }

    private static func register(_ world: CallWorld, _ person: CallWorld.Person, device: String, token: String) async {
        let response = await world.app.request(
            "POST", "/voip/devices", headers: person.headers,
            body: #"{"deviceId":"\#(device)","pushToken":"\#(token)","environment":"production"}"#)
        #expect(response.status == 200, "\(response.text)")
    }

    private static func tokens(_ world: CallWorld, of user: String) async -> [[String: Any]] {
        let response = await world.app.request(
            "GET", "/admin/push/devices?userId=\(user)",
            headers: ["Host": "t", "Authorization": "Bearer \(adminKey)"])
        #expect(response.status == 200, "\(response.text)")
        return response.json?["tokens"] as? [[String: Any]] ?? []
    }

    /// A token not registered again within the age is swept; one its app registered again stays.
    @Test func tokensNotRegisteredAgainAreSwept() async throws {
        let world = try Self.world(provider: ScriptedPushProvider(), maxAgeDays: 30)
        defer { world.close() }
        let bob = try await world.person("bob")
        let old = UUID().uuidString, kept = UUID().uuidString
        await Self.register(world, bob, device: old, token: String(repeating: "ab", count: 32))
        await Self.register(world, bob, device: kept, token: String(repeating: "cd", count: 32))
        #expect(try await world.app.application.sweepStalePushTokens() == 0)
        world.clock.advance(seconds: 29 * 86_400)
        await Self.register(world, bob, device: kept, token: String(repeating: "cd", count: 32))
        #expect(await Self.tokens(world, of: bob.id).count == 2)
        // Two days on the old one is 31 days old: the hourly upkeep (woken by the clock) or a
        // sweep now removes it, and only it.
        world.clock.advance(seconds: 2 * 86_400)
        _ = try await world.app.application.sweepStalePushTokens()
        let left = await Self.tokens(world, of: bob.id)
        #expect(left.count == 1 && left.first?["deviceId"] as? String == kept.lowercased())
        #expect(try await world.app.application.sweepStalePushTokens() == 0)
    }

    /// A delivery and a failure are kept per token, with the failure's reason, for the admin's view.
    @Test func eachTokenShowsItsLastSuccessAndLastFailure() async throws {
        let provider = ScriptedPushProvider()
        let world = try Self.world(provider: provider)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let token = String(repeating: "ef", count: 32)
        await Self.register(world, bob, device: UUID().uuidString, token: token)
        let fresh = await Self.tokens(world, of: bob.id)
        #expect(fresh.count == 1 && fresh.first?["lastSuccessAt"] is NSNull && fresh.first?["bound"] as? Bool == true)
        #expect(fresh.first?["tokenSuffix"] as? String == String(token.suffix(8)))

        let first = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(await eventually { await Self.tokens(world, of: bob.id).first?["lastSuccessAt"] is String })
        #expect(await world.act("cancel", first.id, by: alice).status == 200)
        provider.script(token, [.response(status: 400, reason: "PayloadEmpty")])
        _ = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(
            await eventually {
                await Self.tokens(world, of: bob.id).first?["lastFailureReason"] as? String == "PayloadEmpty"
            })
        let seen = await Self.tokens(world, of: bob.id).first
        #expect(seen?["lastFailureAt"] is String && seen?["lastSuccessAt"] is String)

        #expect(await world.app.request("GET", "/admin/push/devices?userId=\(bob.id)").status == 401)
        let bad = await world.app.request(
            "GET", "/admin/push/devices?userId=nobody",
            headers: ["Host": "t", "Authorization": "Bearer \(Self.adminKey)"])
        #expect(bad.status == 400)
    }
}
