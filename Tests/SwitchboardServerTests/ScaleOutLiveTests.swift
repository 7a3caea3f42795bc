import Foundation
import Testing
import SwitchboardTesting

/// Three `switchboard serve` processes on one PostgreSQL database, clients spread over them,
/// pushes through `switchboard-dev apns-emulator`: a call placed on one instance rings, is
/// answered and ends through the others; a long poll on one wakes for a commit on another;
/// and an instance killed mid-ring leaves its pending push and the ring timeout to the others,
/// each done exactly once.
@Suite(
    "Several instances on one PostgreSQL database (binaries)", .serialized, .timeLimit(.minutes(5)),
    .enabled(if: TestPostgres.available))
struct ScaleOutLiveTests {
    typealias Person = LiveAccount

    static func json(_ text: String) -> [String: Any] { liveJSON(text) }

    static func call(_ address: String, _ caller: Person, _ conversation: String) async throws -> String {
        let reply = await fetch(
            address, "POST", "/calls",
            body:
                #"{"scopeKind":"conversation","scopeId":"\#(conversation)","mode":"audio","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(reply.status == 201, "\(reply.body)")
        return try #require(json(reply.body)["id"] as? String)
    }

    static func cursor(_ address: String, _ person: Person) async throws -> Int {
        try #require(json(await fetch(address, "GET", "/me", headers: person.auth).body)["eventCursor"] as? Int)
    }

    static func callEvents(_ address: String, _ person: Person, callID: String) async -> Int {
        let page = json(await fetch(address, "GET", "/events?after=0", headers: person.auth).body)
        let events = page["events"] as? [[String: Any]] ?? []
        return events.filter { $0["kind"] as? String == "call_changed" && $0["callId"] as? String == callID }.count
    }

    @Test func callsCrossInstancesAndAKilledInstancesPushAndRingTimeoutCompleteOnce() async throws {
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        // Short request deadlines keep the push lease short: twice the longest deadline of the
        // channels that are on, + 5 s, so every configured channel's deadline is set (the rig
        // turns the makers' channels on too; their default 10 s made the lease 25 s, as long
        // as the wait below). The ring outlasts a lease, two idle passes of a dispatcher (10 s
        // each) and a loaded machine's slack.
        let rig = try PushLiveTests.Rig(
            serverSettings: [
                "SWITCHBOARD_APNS_REQUEST_TIMEOUT_SECONDS": "2", "SWITCHBOARD_FCM_REQUEST_TIMEOUT_SECONDS": "2",
                "SWITCHBOARD_XIAOMI_REQUEST_TIMEOUT_SECONDS": "2", "SWITCHBOARD_OPPO_REQUEST_TIMEOUT_SECONDS": "2",
                "SWITCHBOARD_VIVO_REQUEST_TIMEOUT_SECONDS": "2", "SWITCHBOARD_HUAWEI_REQUEST_TIMEOUT_SECONDS": "2",
                "SWITCHBOARD_RING_TIMEOUT_SECONDS": "45",
            ],
            postgresURL: fresh.url, instances: 3)
        let a = rig.server.address, b = rig.others[0].address, c = rig.others[1].address

        // Accounts made on different instances; bob's long poll is held on C.
        let alice = try await liveRegister(a, "alice"), bob = try await liveRegister(b, "bob")
        let conversation = try await liveBefriend(c, alice, bob)
        let bobCursor = try await Self.cursor(c, bob)
        let poll = Task { await fetch(c, "GET", "/events?after=\(bobCursor)&wait=25", headers: bob.auth) }
        #expect(
            try await eventuallyTrying {
                (await liveMetric(c, "switchboard_event_waiters")).map { Double($0) ?? 0 } == 1
            })
        let first = try await Self.call(a, alice, conversation)
        let woken = try await value(of: poll, within: 40)
        let kinds = (Self.json(woken.body)["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
        #expect(kinds == ["call_changed"], "C's poll woke for A's commit: \(woken.body)")
        #expect(await fetch(b, "POST", "/calls/\(first)/accept", headers: bob.auth).status == 200)
        #expect(
            Self.json(await fetch(c, "GET", "/calls/\(first)", headers: alice.auth).body)["state"] as? String
                == "active")
        #expect(await fetch(c, "POST", "/calls/\(first)/leave", headers: alice.auth).status == 200)
        #expect(
            Self.json(await fetch(a, "GET", "/calls/\(first)", headers: bob.auth).body)["endReason"] as? String
                == "completed")

        // Carol's phone is registered through B. A's first push attempt gets a 503, so the job
        // is pending (rescheduled, or still leased by A) when A is killed.
        let carol = try await liveRegister(b, "carol")
        let token = PushLiveTests.deviceToken(0xd7)
        let registered = await fetch(
            b, "POST", "/voip/devices",
            body: #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(token)","environment":"production"}"#,
            headers: carol.auth)
        #expect(registered.status == 200)
        let toCarol = try await liveBefriend(b, alice, carol)
        try await rig.fault(#"{"kind":"serviceUnavailable","count":1}"#)
        let ring = try await Self.call(a, alice, toCarol)
        #expect(try await rig.waitForEmulatorAnswers("503 ServiceUnavailable", count: 1))
        rig.server.crash()

        // B or C sends it once the job is due again (A's lease, if it still held one, runs out).
        let pushes = try await rig.pushes(for: token, wait: 40)
        #expect(pushes.count == 1, "the ring's push arrives once")
        if pushes.count != 1 {
            // What the surviving instances said about pushes, to tell a slow pickup from a lost job.
            let said = rig.others.flatMap(\.lines).filter { $0.contains("push") || $0.contains("dispatch") }
            Issue.record("B and C said:\n\(said.suffix(40).joined(separator: "\n"))")
        }
        // Nobody answers: B's and C's sweeps end the ring (missed), once.
        #expect(
            try await eventuallyTrying {
                Self.json(await fetch(b, "GET", "/calls/\(ring)", headers: carol.auth).body)["endReason"] as? String
                    == "missed"
            })
        #expect(await Self.callEvents(c, carol, callID: ring) == 2, "rang once, ended once")
        try await Task.sleep(for: .seconds(1))
        #expect(try await rig.pushes(for: token, wait: 0).count == 1, "and no second push")
        await rig.close()
    }
}
