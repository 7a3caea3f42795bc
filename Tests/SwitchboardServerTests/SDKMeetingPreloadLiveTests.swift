import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import SwitchboardCore
import SwitchboardKit
import SwitchboardTesting

/// Meeting preload against the real `switchboard` binary over loopback: a meeting scheduled
/// through the SDK, the SDK's `MeetingPreloader` holding a pre-authorisation for it, the group
/// call that starts it, and a join that brings the media token in its answer, once.
@Suite("SDK meeting preload against the binary", .serialized, .timeLimit(.minutes(3)))
struct SDKMeetingPreloadLiveTests {
    @Test func aPreloadedMeetingIsJoinedWithTheMediaTokenInTheJoinsAnswer() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"])
        defer { _ = server.stop() }
        let suffix = UInt32.random(in: 0...UInt32.max)
        let alice = try await liveRegister(server.address, "alice\(suffix)")
        let bob = try await liveRegister(server.address, "bob\(suffix)")
        let carol = try await liveRegister(server.address, "carol\(suffix)")
        _ = try await liveBefriend(server.address, alice, bob)
        _ = try await liveBefriend(server.address, alice, carol)
        func client(_ account: LiveAccount) -> SwitchboardClient {
            SwitchboardClient(
                baseURL: URL(string: "http://\(server.address)")!, token: account.token,
                transport: URLSessionTransport())
        }
        let group = try await client(alice).createGroup(name: "team", memberIDs: [bob.id, carol.id])

        let meeting = try await ScheduledCallClient(client: client(alice)).schedule(
            ScheduleCall(startsAt: Timestamp.iso8601(Date().addingTimeInterval(300)), mode: .audio, title: "Stand-up"),
            inGroup: group.id)
        let preloader = MeetingPreloader(backend: ScheduledCallClient(client: client(bob)))
        await preloader.refresh()
        await preloader.update()
        #expect(await preloader.upcoming.map(\.id) == [meeting.id])
        #expect(
            await preloader.preauthorizations.map(\.scheduledCallId) == [meeting.id], "5 minutes ahead: held already")

        // Alice starts the meeting's call, Carol answers, Bob declines the ring and joins later.
        let call = try await client(alice).createCall(scopeKind: .group, scopeID: group.id, mode: .audio)
        _ = try await client(carol).accept(call.id, withMediaToken: false)
        _ = try await client(bob).perform(.decline, onCall: call.id)
        let token = try #require(await preloader.take(forGroup: group.id))
        let joined = try await client(bob).join(call.id, preauthorization: token.token)
        #expect(joined.call.id == call.id)
        #expect(joined.media?.token.isEmpty == false, "the join's answer carries the media token")
        #expect(await preloader.take(forGroup: group.id) == nil, "single use: handed out once")

        // Used up: the same token again joins the usual way.
        _ = try await client(bob).perform(.leave, onCall: call.id)
        let again = try await client(bob).join(call.id, preauthorization: token.token)
        #expect(again.media == nil)
        #expect(server.stop() == 0)
    }
}
