import Foundation
import Testing
import SwitchboardTesting
import SwitchboardCrypto
import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardPushCore

/// The push path end to end through the real binaries: `switchboard serve` sends VoIP pushes
/// over HTTP/2 and TLS to `switchboard-dev apns-emulator`, as it would to Apple; the tests read
/// the emulator's inbox per device token, as a phone would receive its pushes.
@Suite("Push through the binaries (server → APNs emulator)", .serialized, .timeLimit(.minutes(5)))
struct PushLiveTests {
    static let bundleID = "com.example.phone"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let adminKey = "admin-key-for-tests-0123"
    static let fcmProject = "switchboard-live"
    static let huaweiAppID = "104835621"

    typealias Person = LiveAccount

    static func json(_ text: String) -> [String: Any] { liveJSON(text) }

    static func person(_ rig: Rig, _ name: String, device: String? = nil) async throws -> Person {
        let person = try await liveRegister(rig.server.address, name)
        if let device {
            let registered = await fetch(
                rig.server.address, "POST", "/voip/devices",
                body: #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(device)","environment":"production"}"#,
                headers: person.auth)
            #expect(registered.status == 200)
        }
        return person
    }

    static func befriend(_ rig: Rig, _ a: Person, _ b: Person) async throws -> String {
        try await liveBefriend(rig.server.address, a, b)
    }

    static func call(
        _ rig: Rig, _ caller: Person, _ kind: String, _ scope: String, mode: String = "audio"
    ) async throws -> String {
        let reply = await fetch(
            rig.server.address, "POST", "/calls",
            body:
                #"{"scopeKind":"\#(kind)","scopeId":"\#(scope)","mode":"\#(mode)","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(reply.status == 201, "\(reply.body)")
        return try #require(json(reply.body)["id"] as? String)
    }

    static func deviceToken(_ seed: Int) -> String { String(repeating: String(format: "%02x", seed), count: 32) }

    @Test func aCallRingsTheDeviceWithACorrectVoIPPush() async throws {
        let rig = try Rig()
        let token = Self.deviceToken(0xa1)
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob", device: token)
        let conversation = try await Self.befriend(rig, alice, bob)
        let started = Date()
        let callID = try await Self.call(rig, alice, "conversation", conversation, mode: "video")
        let pushes = try await rig.pushes(for: token)
        #expect(pushes.count == 1)
        let push = try #require(pushes.first)
        let headers = try #require(push["headers"] as? [String: String])
        #expect(headers["apns-push-type"] == "voip")
        #expect(headers["apns-topic"] == "\(Self.bundleID).voip")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "call_\(callID)")
        let expiration = try #require(headers["apns-expiration"].flatMap(Double.init))
        #expect(expiration <= started.timeIntervalSince1970 + 46 && expiration >= started.timeIntervalSince1970 + 43)
        #expect((push["apnsId"] as? String)?.count == 36)
        let payload = try #require(push["payload"] as? [String: Any])
        #expect(payload["callId"] as? String == callID && payload["mode"] as? String == "video")
        #expect(payload["scopeKind"] as? String == "conversation" && payload["scopeId"] as? String == conversation)
        #expect(payload["callerName"] as? String == "alice" && payload["aps"] != nil)
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["state"] as? String == "delivered" && $0["count"] as? Int == 1 }
            })
        await rig.close()
    }

    /// An Android phone rung over FCM: the server gets its access token from the emulator's
    /// OAuth2 endpoint with the service account's RS256 assertion, the message arrives as FCM
    /// would deliver it, the caller's hang-up follows as a `call_ended` notice, and
    /// UNREGISTERED deletes the token.
    @Test func anAndroidPhoneIsRungOverFCMToldWhenTheRingEndsAndUnregisteredDeletesItsToken() async throws {
        let rig = try Rig()
        let token = "eFcm:APA91bLive-Token_1"
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob")
        let registered = await fetch(
            rig.server.address, "POST", "/push/devices",
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"google","tokens":{"fcm":{"token":"\#(token)"}}}"#,
            headers: bob.auth)
        #expect(registered.status == 200, "\(registered.body)")
        let conversation = try await Self.befriend(rig, alice, bob)
        let callID = try await Self.call(rig, alice, "conversation", conversation, mode: "video")
        let messages = try await rig.fcmMessages(for: token)
        #expect(messages.count == 1)
        let body = try #require(messages.first?["payload"] as? [String: Any])
        let message = try #require(body["message"] as? [String: Any])
        #expect(message["token"] as? String == token)
        let data = try #require(message["data"] as? [String: String])
        #expect(
            data["type"] == "call" && data["callId"] == callID && data["mode"] == "video"
                && data["callerName"] == "alice")
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == "HIGH" && android["collapse_key"] as? String == "call_\(callID)")
        let ttl = try #require((android["ttl"] as? String).flatMap { Int($0.dropLast()) })
        #expect((30...45).contains(ttl), "no longer than the ring window: \(ttl) s")
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["channel"] as? String == "fcm" && $0["state"] as? String == "delivered" }
            })
        // The caller hangs up: the phone is told, under the same collapse key, to stop ringing.
        _ = await fetch(rig.server.address, "POST", "/calls/\(callID)/cancel", headers: alice.auth)
        #expect(try await eventuallyTrying { try await rig.fcmMessages(for: token, wait: 1).count == 2 })
        let notice = try #require(
            (try await rig.fcmMessages(for: token).last?["payload"] as? [String: Any])?["message"] as? [String: Any])
        #expect(
            (notice["data"] as? [String: String])?["type"] == "call_ended"
                && (notice["data"] as? [String: String])?["reason"] == "cancelled")
        #expect((notice["android"] as? [String: Any])?["collapse_key"] as? String == "call_\(callID)")
        #expect(
            try await rig.waitForOutcome {
                $0.contains {
                    $0["channel"] as? String == "fcm" && $0["state"] as? String == "delivered"
                        && $0["count"] as? Int == 2
                }
            })

        try await rig.fcmFault(#"{"faults":[{"token":"\#(token)","error":"UNREGISTERED"}]}"#)
        let second = try await Self.call(rig, alice, "conversation", conversation)
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["channel"] as? String == "fcm" && $0["reason"] as? String == "UNREGISTERED" }
            })
        _ = await fetch(rig.server.address, "POST", "/calls/\(second)/cancel", headers: alice.auth)
        _ = try await Self.call(rig, alice, "conversation", conversation)
        let outcomes = ((await rig.adminStatus()["outcomes"] as? [[String: Any]]) ?? []).filter {
            $0["channel"] as? String == "fcm"
        }
        #expect(
            outcomes.reduce(0) { $0 + (($1["count"] as? Int) ?? 0) } == 3,
            "ring, notice, failed ring; nothing after: the token was deleted")
        #expect(await rig.adminStatus()["pending"] as? Int == 0)
        await rig.close()
    }

    /// Xiaomi, OPPO and vivo phones through the binaries: each ring reaches its maker's stand-in
    /// in that service's shape; a cancelled ring is told to every phone (Xiaomi silently, OPPO
    /// and vivo by a notification in place of the ring's, under its id); a busy answer is
    /// retried with backoff, a ring cancelled while its retry waits is dropped, and Xiaomi's
    /// 20301 deletes the token.
    @Test func makersPhonesAreRungOverTheirOwnServices() async throws {
        let rig = try Rig()
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob")
        let tokens = ["xiaomi": "xm-reg/Live+1", "oppo": "OPPO_CN_live2", "vivo": "16424987654321live3"]
        for (channel, token) in tokens.sorted(by: { $0.key < $1.key }) {
            let registered = await fetch(
                rig.server.address, "POST", "/push/devices",
                body:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"\#(channel)","tokens":{"fcm":{"token":"fcm-\#(channel)"},"\#(channel)":{"token":"\#(token)"}}}"#,
                headers: bob.auth)
            #expect(registered.status == 200, "\(registered.body)")
        }
        let conversation = try await Self.befriend(rig, alice, bob)
        // What the OPPO and vivo phones show: (data type, call id, content, notification id).
        let shown = { (channel: String, wait: Int) async throws -> [(String?, String?, String?, Int?)] in
            try await rig.vendorMessages(channel, for: tokens[channel]!, wait: wait).compactMap {
                $0["payload"] as? [String: Any]
            }.map { payload in
                let notification = channel == "oppo" ? payload["notification"] as? [String: Any] ?? [:] : payload
                let data =
                    channel == "oppo"
                    ? VendorNotification.fields(of: Array(((notification["action_parameters"] as? String) ?? "").utf8))
                    : notification["clientCustomMap"] as? [String: String]
                return (
                    data?["type"], data?["callId"], notification["content"] as? String,
                    (notification[channel == "oppo" ? "notify_id" : "notifyId"] as? Int)
                )
            }
        }
        let outcomes = { (channel: String) async -> [[String: Any]] in
            ((await rig.adminStatus()["outcomes"] as? [[String: Any]]) ?? []).filter {
                $0["channel"] as? String == channel
            }
        }

        // 1. One ring each, in each service's shape; the cancel reaches every phone.
        let first = try await Self.call(rig, alice, "conversation", conversation, mode: "video")
        let xiaomi = try #require(
            try await rig.vendorMessages("xiaomi", for: tokens["xiaomi"]!).first?["payload"] as? [String: String])
        #expect(
            xiaomi["registration_id"] == tokens["xiaomi"] && xiaomi["restricted_package_name"] == "com.example.phone")
        #expect(
            xiaomi["title"] == "alice" && xiaomi["description"] == "Incoming video call"
                && xiaomi["extra.channel_id"] == "calls")
        #expect(VendorNotification.fields(of: Array((xiaomi["payload"] ?? "").utf8))?["callId"] == first)
        let oppo = try #require(
            try await rig.vendorMessages("oppo", for: tokens["oppo"]!).first?["payload"] as? [String: Any])
        let notification = try #require(oppo["notification"] as? [String: Any])
        #expect(oppo["target_value"] as? String == tokens["oppo"] && notification["channel_id"] as? String == "calls")
        #expect(
            (notification["off_line_ttl"] as? Int).map { (30...45).contains($0) } == true,
            "no longer than the ring window")
        let vivo = try #require(
            try await rig.vendorMessages("vivo", for: tokens["vivo"]!).first?["payload"] as? [String: Any])
        #expect(
            vivo["regId"] as? String == tokens["vivo"]
                && (vivo["clientCustomMap"] as? [String: String])?["callId"] == first)
        #expect(
            try await rig.waitForOutcome { rows in
                ["xiaomi", "oppo", "vivo"].allSatisfy { channel in
                    rows.contains { $0["channel"] as? String == channel && $0["state"] as? String == "delivered" }
                }
            })
        _ = await fetch(rig.server.address, "POST", "/calls/\(first)/cancel", headers: alice.auth)
        #expect(
            try await eventuallyTrying {
                try await rig.vendorMessages("xiaomi", for: tokens["xiaomi"]!, wait: 1).count == 2
            })
        let ended = try #require(
            try await rig.vendorMessages("xiaomi", for: tokens["xiaomi"]!).last?["payload"] as? [String: String])
        #expect(
            ended["pass_through"] == "1"
                && VendorNotification.fields(of: Array((ended["payload"] ?? "").utf8))?["reason"] == "cancelled")
        for channel in ["oppo", "vivo"] {
            // In place of the ring: the same notification id, the ending's text.
            let replaced = try await eventuallyTrying {
                let messages = try await shown(channel, 1)
                return messages.count == 2 && messages[1].0 == "call_ended" && messages[1].1 == first
                    && messages[1].2 == "Call cancelled" && messages[1].3 != nil && messages[1].3 == messages[0].3
            }
            let seen = try await shown(channel, 0)
            #expect(replaced, "\(channel): \(seen)")
        }

        // 2. OPPO is busy once: retried and delivered. Xiaomi no longer knows its phone: the token goes.
        try await rig.vendorCodes("oppo", token: tokens["oppo"]!, ["-1"])
        try await rig.vendorCodes("xiaomi", token: tokens["xiaomi"]!, ["20301"])
        let second = try await Self.call(rig, alice, "conversation", conversation)
        #expect(
            try await eventuallyTrying {
                try await shown("oppo", 1).contains { $0.0 == "call" && $0.1 == second }
            })
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["channel"] as? String == "xiaomi" && $0["reason"] as? String == "20301" }
            })
        #expect(
            try await eventuallyTrying {
                try await shown("vivo", 1).contains { $0.0 == "call" && $0.1 == second }
            })
        _ = await fetch(rig.server.address, "POST", "/calls/\(second)/cancel", headers: alice.auth)

        // 3. vivo rate-limits: the ring cancelled while its retry waits is dropped, never sent.
        // (It keeps rate-limiting, so the cancel always comes while a retry waits, however
        // slowly this test gets to it on a loaded machine.)
        try await rig.vendorCodes("vivo", token: tokens["vivo"]!, Array(repeating: "10072", count: 8))
        let third = try await Self.call(rig, alice, "conversation", conversation)
        #expect(try await rig.waitForEmulatorAnswers("200 10072", count: 1))
        // The Xiaomi phone's token is gone: its ring goes through FCM now. (Waited for before the
        // cancel: a ring still queued when the call is cancelled is rightly never sent.)
        func ringsOverFCM() async throws -> [[String: String]] {
            try await rig.fcmMessages(for: "fcm-xiaomi", wait: 1).compactMap {
                (($0["payload"] as? [String: Any])?["message"] as? [String: Any])?["data"] as? [String: String]
            }
        }
        #expect(
            try await eventuallyTrying {
                try await ringsOverFCM().contains { $0["type"] == "call" && $0["callId"] == third }
            })
        #expect(await fetch(rig.server.address, "POST", "/calls/\(third)/cancel", headers: alice.auth).status == 200)
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["channel"] as? String == "vivo" && $0["state"] as? String == "dropped" }
            })
        let vivoRings = try await shown("vivo", 0).filter { $0.0 == "call" }.map(\.1)
        #expect(vivoRings == [first, second], "the first ring and the second; not the third")

        // 4. OPPO's and vivo's rings never went through FCM.
        #expect(
            await outcomes("xiaomi").reduce(0) { $0 + (($1["count"] as? Int) ?? 0) } == 3, "ring, notice, failed ring")
        let oppoOverFCM = try await rig.fcmMessages(for: "fcm-oppo", wait: 0),
            vivoOverFCM = try await rig.fcmMessages(for: "fcm-vivo", wait: 0)
        #expect(oppoOverFCM.isEmpty && vivoOverFCM.isEmpty)
        await rig.close()
    }

    /// An iPhone with a VoIP and an alert token: rings go to PushKit only; a cancelled ring
    /// follows as a background notice and a missed one as an alert, both on the alert token.
    @Test func anIPhoneIsToldOnItsAlertTokenWhenARingIsCancelledOrMissed() async throws {
        let rig = try Rig(serverSettings: ["SWITCHBOARD_RING_TIMEOUT_SECONDS": "5"])
        let voip = Self.deviceToken(0xc3), alert = Self.deviceToken(0xd4)
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob")
        let registered = await fetch(
            rig.server.address, "POST", "/push/devices",
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(voip)","environment":"production"},"ios-alert":{"token":"\#(alert)","environment":"production"}}}"#,
            headers: bob.auth)
        #expect(registered.status == 200, "\(registered.body)")
        let conversation = try await Self.befriend(rig, alice, bob)

        let cancelled = try await Self.call(rig, alice, "conversation", conversation)
        #expect(try await rig.pushes(for: voip).count == 1)
        _ = await fetch(rig.server.address, "POST", "/calls/\(cancelled)/cancel", headers: alice.auth)
        let background = try #require(try await rig.pushes(for: alert).first)
        let headers = try #require(background["headers"] as? [String: String])
        #expect(
            headers["apns-push-type"] == "background" && headers["apns-priority"] == "5"
                && headers["apns-topic"] == Self.bundleID)
        #expect(headers["apns-collapse-id"] == "call_\(cancelled)")
        let payload = try #require(background["payload"] as? [String: Any])
        #expect(
            payload["type"] as? String == "call_ended" && payload["reason"] as? String == "cancelled"
                && payload["callId"] as? String == cancelled)
        #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)

        let missed = try await Self.call(rig, alice, "conversation", conversation)
        #expect(try await eventuallyTrying { try await rig.pushes(for: voip, wait: 1).count == 2 })
        // Five seconds later nobody has answered: an alert says so.
        let alerts = try await eventuallyTrying(seconds: 60) { try await rig.pushes(for: alert, wait: 5).count == 2 }
        #expect(alerts)
        let alertPush = try #require(try await rig.pushes(for: alert).last)
        #expect((alertPush["headers"] as? [String: String])?["apns-push-type"] == "alert")
        let alertPayload = try #require(alertPush["payload"] as? [String: Any])
        #expect(alertPayload["type"] as? String == "call_missed" && alertPayload["callId"] as? String == missed)
        let aps = try #require(alertPayload["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: String])?["body"] == "Missed call from alice")
        #expect(try await rig.pushes(for: voip, wait: 0).count == 2, "no notice ever goes to the VoIP token")
        await rig.close()
    }

    @Test func serverErrorsAreRetriedCancelledRingsAreDroppedAnd410DeletesTheToken() async throws {
        let rig = try Rig()
        let token = Self.deviceToken(0xb2)
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob", device: token)
        let conversation = try await Self.befriend(rig, alice, bob)

        // 1. A 500 is retried and then delivered, once.
        try await rig.fault(#"{"kind":"internalServerError","token":"\#(token)","count":1}"#)
        let first = try await Self.call(rig, alice, "conversation", conversation)
        let delivered = try await rig.pushes(for: token)
        #expect(delivered.count == 1)
        #expect(try await rig.waitForOutcome { $0.contains { $0["state"] as? String == "delivered" } })
        _ = await fetch(rig.server.address, "POST", "/calls/\(first)/cancel", headers: alice.auth)

        // 2. A ring cancelled while its job waits for a retry is dropped, never sent. (The 503s
        // go on, so the cancel comes while a retry waits however slowly this test gets to it.)
        try await rig.fault(#"{"kind":"serviceUnavailable","token":"\#(token)","count":8}"#)
        let second = try await Self.call(rig, alice, "conversation", conversation)
        #expect(try await rig.waitForEmulatorAnswers("503 ServiceUnavailable", count: 1))  // the first attempt got its 503
        #expect(await fetch(rig.server.address, "POST", "/calls/\(second)/cancel", headers: alice.auth).status == 200)
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["state"] as? String == "dropped" && $0["reason"] as? String == "call_not_ringing" }
            })
        #expect(try await rig.pushes(for: token, wait: 0).count == 1, "the cancelled ring must not reach the phone")
        try await rig.clearFaults()

        // 3. 410 Unregistered deletes the token: the next ring writes no job for it.
        try await rig.fault(#"{"kind":"unregistered","token":"\#(token)","count":1}"#)
        let third = try await Self.call(rig, alice, "conversation", conversation)
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["state"] as? String == "failed" && $0["reason"] as? String == "Unregistered" }
            })
        _ = await fetch(rig.server.address, "POST", "/calls/\(third)/cancel", headers: alice.auth)
        _ = try await Self.call(rig, alice, "conversation", conversation)
        // Jobs are written in the transaction that starts the ring: had one been written, it
        // would be pending or finished by now.
        let pending = await rig.adminStatus()["pending"] as? Int
        #expect(pending == 0)
        let failedOrDelivered = ((await rig.adminStatus()["outcomes"] as? [[String: Any]]) ?? []).reduce(0) {
            $0 + (($1["count"] as? Int) ?? 0)
        }
        #expect(failedOrDelivered == 3, "no fourth job: the token was deleted")
        await rig.close()
    }

    @Test func jobsPendingWhenTheServerIsKilledAreDeliveredAfterRestartOnceEach() async throws {
        let rig = try Rig()
        let tokens = [Self.deviceToken(0xc1), Self.deviceToken(0xc2), Self.deviceToken(0xc3)]
        let owner = try await Self.person(rig, "owner")
        var members: [Person] = []
        for (index, token) in tokens.enumerated() {
            members.append(try await Self.person(rig, "member\(index)", device: token))
        }
        for member in members { _ = try await Self.befriend(rig, owner, member) }
        let ids = members.map { "\"\($0.id)\"" }.joined(separator: ",")
        let group = try #require(
            Self.json(
                await fetch(
                    rig.server.address, "POST", "/groups", body: #"{"name":"team","memberIds":[\#(ids)]}"#,
                    headers: owner.auth
                ).body)["id"] as? String)

        // Every first attempt gets a 503, so all three jobs are pending when the server dies.
        try await rig.fault(#"{"kind":"serviceUnavailable","count":3}"#)
        _ = try await Self.call(rig, owner, "group", group)
        #expect(try await rig.waitForEmulatorAnswers("503 ServiceUnavailable", count: 3))
        #expect(
            try await eventuallyTrying {
                await rig.metric(#"switchboard_push_attempts_retried_total{provider="apns",channel="ios-voip"}"#) == 3
            })
        #expect(await rig.adminStatus()["pending"] as? Int == 3)
        try rig.crashAndRestart()

        var seen: [String] = []
        for token in tokens {
            let pushes = try await rig.pushes(for: token)
            #expect(pushes.count == 1, "each device gets its ring exactly once")
            seen += pushes.compactMap { $0["apnsId"] as? String }
        }
        #expect(Set(seen).count == 3, "one apns-id per job")
        #expect(
            try await rig.waitForOutcome {
                $0.contains { $0["state"] as? String == "delivered" && $0["count"] as? Int == 3 }
            })
        await rig.close()
    }

    @Test func aHungRequestDelaysNoOtherTokensPushOrRetry() async throws {
        // The emulator holds one token's answer for 25 s; the server's request deadline is 20 s.
        let rig = try Rig(serverSettings: ["SWITCHBOARD_APNS_REQUEST_TIMEOUT_SECONDS": "20"])
        let hung = Self.deviceToken(0xd1), prompt = Self.deviceToken(0xd2), retried = Self.deviceToken(0xd3)
        let owner = try await Self.person(rig, "owner")
        var members: [Person] = []
        for (index, token) in [hung, prompt, retried].enumerated() {
            members.append(try await Self.person(rig, "member\(index)", device: token))
        }
        for member in members { _ = try await Self.befriend(rig, owner, member) }
        let ids = members.map { "\"\($0.id)\"" }.joined(separator: ",")
        let group = try #require(
            Self.json(
                await fetch(
                    rig.server.address, "POST", "/groups", body: #"{"name":"team","memberIds":[\#(ids)]}"#,
                    headers: owner.auth
                ).body)["id"] as? String)
        try await rig.fault(#"{"kind":"delay","milliseconds":25000,"token":"\#(hung)","count":1}"#)
        try await rig.fault(#"{"kind":"internalServerError","token":"\#(retried)","count":1}"#)

        // One ring, three jobs: the prompt token's push arrives while the hung one is held.
        let rang = Date()
        _ = try await Self.call(rig, owner, "group", group)
        #expect(try await rig.pushes(for: prompt, wait: 30).count == 1)
        // The 500 is retried after min(2^0, 8) s + jitter (1.0-1.5 s), not after the hung
        // request's deadline: when the retry arrives, the only retry the server has recorded
        // is this token's own (the hung request's timeout, 20 s away, would be the second).
        let pushes = try await rig.pushes(for: retried, wait: 30)
        #expect(pushes.count == 1)
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let stamp = try #require(pushes.first?["receivedAt"] as? String)
        let arrived = try #require(format.date(from: stamp))
        #expect(arrived.timeIntervalSince(rang) >= 0.95, "retried no sooner than its backoff")
        #expect(await rig.metric(#"switchboard_push_attempts_retried_total{provider="apns",channel="ios-voip"}"#) == 1)
        #expect(try await rig.emulatorResponses()["500 InternalServerError"] == 1)
        #expect(try await rig.pushes(for: hung, wait: 0).isEmpty, "the hung answer is still held")
        await rig.close()
    }
}
