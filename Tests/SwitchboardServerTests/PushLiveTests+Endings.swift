import Foundation
import Testing
import SwitchboardTesting
import SwitchboardPushCore
@testable import SwitchboardServer

// Every ending told on every channel, and what each maker's service is sent, through the binaries.
extension PushLiveTests {
    /// The channels a phone can be told on, each with the token of one of Bob's devices.
    private static let endingTokens: [(channel: String, token: String)] = [
        ("ios-alert", deviceToken(0xe1)), ("fcm", "fcm-endings-1"), ("huawei", "IQAAAACy0kYhAAB-endings"),
        ("xiaomi", "xm-endings/1"), ("oppo", "OPPO_CN_endings"), ("vivo", "16424987654321endings"),
    ]

    /// An ending's data type: `call_ended`, or on an iPhone's alert token `call_missed` (an alert).
    private static func isEnding(_ type: String?) -> Bool { type == "call_ended" || type == "call_missed" }

    /// What one device was sent, as (type, callId, reason) of each data object, oldest first.
    private static func told(
        _ rig: Rig, _ channel: String, _ token: String, wait: Int
    ) async throws -> [(
        String?, String?, String?
    )] {
        func triple(_ data: [String: String]?) -> (String?, String?, String?) {
            (data?["type"], data?["callId"], data?["reason"])
        }
        switch channel {
        case "ios-alert":
            return try await rig.pushes(for: token, wait: wait).map { push in
                let payload = push["payload"] as? [String: Any] ?? [:]
                return (payload["type"] as? String, payload["callId"] as? String, payload["reason"] as? String)
            }
        case "fcm":
            return try await rig.fcmMessages(for: token, wait: wait).map {
                triple((($0["payload"] as? [String: Any])?["message"] as? [String: Any])?["data"] as? [String: String])
            }
        default:
            return try await rig.vendorMessages(channel, for: token, wait: wait).map { message in
                let payload = message["payload"]
                switch channel {
                case "huawei":
                    let data = ((payload as? [String: Any])?["message"] as? [String: Any])?["data"] as? String
                    return triple(VendorNotification.fields(of: Array((data ?? "").utf8)))
                case "xiaomi":
                    return triple(
                        VendorNotification.fields(of: Array(((payload as? [String: String])?["payload"] ?? "").utf8)))
                case "oppo":
                    let notification = (payload as? [String: Any])?["notification"] as? [String: Any]
                    return triple(
                        VendorNotification.fields(
                            of: Array(((notification?["action_parameters"] as? String) ?? "").utf8)))
                default:
                    return triple((payload as? [String: Any])?["clientCustomMap"] as? [String: String])
                }
            }
        }
    }

    /// Bob has an iPhone (VoIP and alert tokens) and five Android phones (FCM only, Huawei,
    /// Xiaomi, OPPO, vivo), all signed in on one session. Each way a ring can end, four calls:
    /// every phone that rang is told how it ended, on its own channel.
    @Test func everyEndingReachesEveryChannel() async throws {
        // A ring window a loaded machine cannot outrun before the test cancels, answers or
        // declines (5 s was: under make test beside CPU hogs a call was missed first); the
        // fourth call waits it out.
        let rig = try Rig(serverSettings: ["SWITCHBOARD_RING_TIMEOUT_SECONDS": "30"])
        let alice = try await Self.person(rig, "alice"), bob = try await Self.person(rig, "bob")
        let voip = Self.deviceToken(0xe0)
        for (channel, token) in Self.endingTokens {
            let body =
                switch channel {
                case "ios-alert":
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(voip)","environment":"production"},"ios-alert":{"token":"\#(token)","environment":"production"}}}"#
                case "fcm":
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"samsung","tokens":{"fcm":{"token":"\#(token)"}}}"#
                default:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"\#(channel)","tokens":{"\#(channel)":{"token":"\#(token)"}}}"#
                }
            let registered = await fetch(rig.server.address, "POST", "/push/devices", body: body, headers: bob.auth)
            #expect(registered.status == 200, "\(channel): \(registered.body)")
        }
        // Bob answers and declines on another session (his tablet), so these phones were not the ones that acted.
        let login = await fetch(
            rig.server.address, "POST", "/auth/login", body: #"{"username":"bob","password":"long enough"}"#)
        let tablet = LiveAccount(token: try #require(liveJSON(login.body)["token"] as? String), id: bob.id)
        let conversation = try await Self.befriend(rig, alice, bob)

        var expected: [(call: String, reason: String)] = []
        for ending in ["cancelled", "answered_elsewhere", "declined_elsewhere", "missed"] {
            let call = try await Self.call(rig, alice, "conversation", conversation)
            // Every phone rang (the iPhone on its VoIP token).
            #expect(
                try await eventuallyTrying {
                    try await rig.pushes(for: voip, wait: 1).contains { push in
                        (push["payload"] as? [String: Any])?["callId"] as? String == call
                    }
                })
            for (channel, token) in Self.endingTokens where channel != "ios-alert" {
                let rang = try await eventuallyTrying {
                    try await Self.told(rig, channel, token, wait: 1).contains { $0.0 == "call" && $0.1 == call }
                }
                #expect(rang, "\(channel) rang for \(ending)")
            }
            let action: (String, LiveAccount)? =
                switch ending {
                case "cancelled": ("cancel", alice)
                case "answered_elsewhere": ("accept", tablet)
                case "declined_elsewhere": ("decline", tablet)
                default: nil
                }
            if let (verb, account) = action {
                #expect(
                    await fetch(rig.server.address, "POST", "/calls/\(call)/\(verb)", headers: account.auth).status
                        == 200)
            }
            expected.append((call, ending))
            for (channel, token) in Self.endingTokens {
                let told = try await eventuallyTrying(seconds: 60) {
                    try await Self.told(rig, channel, token, wait: 1).contains {
                        Self.isEnding($0.0) && $0.1 == call && $0.2 == ending
                    }
                }
                let seen = try await Self.told(rig, channel, token, wait: 0)
                #expect(told, "\(channel) not told \(ending): \(seen)")
            }
            if ending == "answered_elsewhere" {
                #expect(
                    await fetch(rig.server.address, "POST", "/calls/\(call)/leave", headers: tablet.auth).status == 200)
            }
        }
        // Once each, and nothing else besides the rings.
        for (channel, token) in Self.endingTokens {
            let endings = try await Self.told(rig, channel, token, wait: 0).filter { Self.isEnding($0.0) }
            #expect(
                endings.map { "\($0.1 ?? "")/\($0.2 ?? "")" } == expected.map { "\($0.call)/\($0.reason)" },
                "\(channel)")
        }
        await rig.close()
    }

    /// A caller with a long Chinese name rings every maker's phone: each message is within
    /// that service's own limits (vivo counts a Chinese character as two), cut between whole
    /// characters.
    @Test func aLongChineseNameRingsEveryMakersPhone() async throws {
        let rig = try Rig()
        let name = String(repeating: "欧阳", count: 14) + "娜娜👩🏽‍💻"
        let reply = await fetch(
            rig.server.address, "POST", "/auth/register",
            body: #"{"username":"ouyang","password":"long enough","displayName":"\#(name)"}"#)
        #expect(reply.status == 201, "\(reply.body)")
        let caller = LiveAccount(
            token: try #require(liveJSON(reply.body)["token"] as? String),
            id: try #require((liveJSON(reply.body)["user"] as? [String: Any])?["id"] as? String))
        let bob = try await Self.person(rig, "bob")
        let tokens = [
            "huawei": "IQAAAACy0kYhAAB-long", "xiaomi": "xm-long/1", "oppo": "OPPO_CN_long", "vivo": "1642long",
        ]
        for (channel, token) in tokens.sorted(by: { $0.key < $1.key }) {
            let registered = await fetch(
                rig.server.address, "POST", "/push/devices",
                body:
                    #"{"deviceId":"\#(UUID().uuidString)","platform":"android","brand":"\#(channel)","tokens":{"\#(channel)":{"token":"\#(token)"}}}"#,
                headers: bob.auth)
            #expect(registered.status == 200)
        }
        let conversation = try await Self.befriend(rig, caller, bob)
        let call = try await Self.call(rig, caller, "conversation", conversation)
        for (channel, token) in tokens {
            let rang = try await eventuallyTrying {
                try await Self.told(rig, channel, token, wait: 1).contains { $0.0 == "call" && $0.1 == call }
            }
            #expect(rang, "\(channel) rang")
        }
        let vivo = try #require(
            try await rig.vendorMessages("vivo", for: tokens["vivo"]!).first?["payload"] as? [String: Any])
        let title = try #require(vivo["title"] as? String)
        #expect(title.hasPrefix("欧阳") && title.hasSuffix("…"))
        #expect(title.unicodeScalars.reduce(0) { $0 + ($1.isASCII ? 1 : 2) } <= 40)
        #expect(
            try await rig.waitForOutcome { rows in
                ["huawei", "xiaomi", "oppo", "vivo"].allSatisfy { channel in
                    rows.contains { $0["channel"] as? String == channel && $0["state"] as? String == "delivered" }
                }
            })
        await rig.close()
    }
}
