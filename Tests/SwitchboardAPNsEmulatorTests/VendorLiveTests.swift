import Foundation
import Testing
import SwitchboardAPNsEmulator
import SwitchboardPush
import SwitchboardTesting
import SwitchboardPushCore

/// The Xiaomi, OPPO and vivo transports against the emulator's stand-ins, over loopback h2c:
/// the auth each service wants, the message it gets, and the answers the reason tables read.
@Suite("Xiaomi, OPPO and vivo transports against the emulator", .serialized, .timeLimit(.minutes(2)))
struct VendorLiveTests {
    static let ring = Array(
        #"{"callId":"call-9","callerName":"Alice","expiresAt":"1800000000","mode":"audio","scopeId":"c","scopeKind":"conversation","type":"call"}"#
            .utf8)

    static func emulator() throws -> (APNsEmulator, String) {
        var configuration = APNsEmulatorConfiguration(port: 0)
        configuration.xiaomiApp = XiaomiEmulatorApp(packageName: "com.example.app", appSecret: "xm-secret")
        configuration.oppoApp = OPPOEmulatorApp(appKey: "oppo-key", masterSecret: "oppo-master")
        configuration.vivoApp = VivoEmulatorApp(appID: "10001", appKey: "vivo-key", appSecret: "vivo-secret")
        let emulator = APNsEmulator(configuration: configuration)
        return (emulator, "http://127.0.0.1:\(try emulator.start().port)")
    }

    static func job(_ channel: String, _ token: String, payload: [UInt8] = ring) -> PushJob {
        PushJob(
            id: UUID().uuidString.lowercased(), callID: "call-9", userID: "u", channel: channel, token: token,
            environment: "",
            payload: payload, headers: [], attempts: 0, expiresAt: Date().addingTimeInterval(30))
    }

    static func verdict(_ channel: VendorChannel, _ result: PushSendResult) -> PushAction {
        channel.verdict(for: result).action
    }

    @Test func xiaomiTakesTheFormWithTheAppSecretAndSaysWhichIDsAreDead() async throws {
        let (emulator, base) = try Self.emulator()
        let transport = try XiaomiTransport(
            appSecret: "xm-secret", packageName: "com.example.app", channelID: "calls", baseURL: base, caFile: nil,
            connections: 1,
            requestTimeout: .seconds(10))
        let channel = VendorChannel.xiaomi(transport: transport)
        let id = "dW5pcXVlLXhpYW9taS1yZWdpZA=="
        let delivered = await channel.send(Self.job("xiaomi", id))
        #expect(delivered == .response(status: 200, reason: "0") && Self.verdict(channel, delivered) == .delivered)
        let inbox = emulator.vendorInbox(channel: "xiaomi", token: id)
        let first = try #require(inbox.first)
        let form = try #require(try JSONSerialization.jsonObject(with: Data(first.payload)) as? [String: String])
        #expect(
            inbox.count == 1 && form["title"] == "Alice" && form["pass_through"] == "0"
                && form["extra.channel_id"] == "calls")
        #expect(
            Int(form["time_to_live"] ?? "").map { (25_000...30_000).contains($0) } == true,
            "what is left of the ring window, in ms")
        emulator.addVendorCodes(["20301"], channel: "xiaomi", token: "gone")
        #expect(Self.verdict(channel, await channel.send(Self.job("xiaomi", "gone"))) == .deleteToken)
        emulator.addVendorCodes(["bad_regids"], channel: "xiaomi", token: "listed")
        let listed = await channel.send(Self.job("xiaomi", "listed"))
        #expect(
            listed == .response(status: 200, reason: "20301") && Self.verdict(channel, listed) == .deleteToken,
            "named in bad_regids")
        emulator.addVendorCodes(["10003"], channel: "xiaomi", token: "busy")
        #expect(Self.verdict(channel, await channel.send(Self.job("xiaomi", "busy"))) == .retry)
        await transport.shutdown()
        let wrong = try XiaomiTransport(
            appSecret: "not-it", packageName: "com.example.app", channelID: nil, baseURL: base, caFile: nil,
            connections: 1, requestTimeout: .seconds(10))
        let refused = await wrong.send(Self.job("xiaomi", id))
        #expect(
            refused == .response(status: 401, reason: "22008")
                && XiaomiResponsePolicy.action(status: 401, reason: "22008") == .fail)
        await wrong.shutdown()
        await emulator.shutdown()
    }

    @Test func oppoSignsForOneAuthTokenAndFetchesOneNewOneWhenManyRequestsFindItRejected() async throws {
        let (emulator, base) = try Self.emulator()
        let transport = try OPPOTransport(
            appKey: "oppo-key", masterSecret: "oppo-master", channelID: "calls", baseURL: base, caFile: nil,
            connections: 1,
            requestTimeout: .seconds(10))
        let channel = VendorChannel.oppo(transport: transport)
        let id = "OPPO_CN_b6bbd94b59cdb5df8391642c1509b7fe"
        #expect(Self.verdict(channel, await channel.send(Self.job("oppo", id))) == .delivered)
        #expect(Self.verdict(channel, await channel.send(Self.job("oppo", id))) == .delivered)
        #expect(
            transport.tokenFetches == 1 && emulator.vendorTokensIssued(channel: "oppo") == 1, "the auth token is shared"
        )
        let stored = try #require(emulator.vendorInbox(channel: "oppo", token: id).first)
        let message = try #require(try JSONSerialization.jsonObject(with: Data(stored.payload)) as? [String: Any])
        #expect((message["notification"] as? [String: Any])?["channel_id"] as? String == "calls")

        // OPPO forgets the token: every request in flight is refused with code 11, one new token follows.
        emulator.revokeVendorTokens(channel: "oppo")
        let refused = await withTaskGroup(of: PushSendResult.self) { group in
            for _ in 0..<8 { group.addTask { await channel.send(Self.job("oppo", id)) } }
            return await group.reduce(into: [PushSendResult]()) { $0.append($1) }
        }
        // Those sent before the first refusal came back carry the dead token; later ones may
        // already have the new one.
        let rejected = refused.filter { $0 == .response(status: 200, reason: "11") }
        #expect(
            !rejected.isEmpty
                && refused.allSatisfy {
                    $0 == .response(status: 200, reason: "11") || $0 == .response(status: 200, reason: "0")
                })
        #expect(Self.verdict(channel, try #require(rejected.first)) == .refreshProviderTokenAndRetry)
        let again = await withTaskGroup(of: PushSendResult.self) { group in
            for _ in 0..<8 { group.addTask { await channel.send(Self.job("oppo", id)) } }
            return await group.reduce(into: [PushSendResult]()) { $0.append($1) }
        }
        #expect(again.allSatisfy { $0 == .response(status: 200, reason: "0") })
        #expect(transport.tokenFetches == 2 && emulator.vendorTokensIssued(channel: "oppo") == 2, "no refresh storm")

        emulator.addVendorCodes(["10000"], channel: "oppo", token: "gone")
        #expect(Self.verdict(channel, await channel.send(Self.job("oppo", "gone"))) == .deleteToken)
        await transport.shutdown()
        let wrong = try OPPOTransport(
            appKey: "oppo-key", masterSecret: "nope", channelID: "calls", baseURL: base, caFile: nil, connections: 1,
            requestTimeout: .seconds(10))
        guard case .transportFailure(let message) = await wrong.send(Self.job("oppo", id)) else {
            Issue.record("a refused signature is a failure to retry, with its reason")
            return
        }
        #expect(message.contains("Invalid Signature"))
        await wrong.shutdown()
        await emulator.shutdown()
    }

    @Test func vivoSignsForItsAuthTokenAndReadsAGoneDeviceFromASuccessfulAnswer() async throws {
        let (emulator, base) = try Self.emulator()
        let transport = try VivoTransport(
            appID: "10001", appKey: "vivo-key", appSecret: "vivo-secret", baseURL: base, caFile: nil, connections: 1,
            requestTimeout: .seconds(10))
        let channel = VendorChannel.vivo(transport: transport)
        let id = "16424987654321234567890"
        let job = Self.job("vivo", id)
        #expect(Self.verdict(channel, await channel.send(job)) == .delivered)
        let stored = try #require(emulator.vendorInbox(channel: "vivo", token: id).first)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(stored.payload)) as? [String: Any])
        #expect(
            body["requestId"] as? String == job.id && body["title"] as? String == "Alice"
                && body["timeToLive"] as? Int == 60)
        emulator.addVendorCodes(["invalidUser"], channel: "vivo", token: "uninstalled")
        let gone = await channel.send(Self.job("vivo", "uninstalled"))
        #expect(
            gone == .response(status: 200, reason: VivoResponsePolicy.deviceGone)
                && Self.verdict(channel, gone) == .deleteToken)
        emulator.addVendorCodes(["10070"], channel: "vivo", token: "quota")
        #expect(Self.verdict(channel, await channel.send(Self.job("vivo", "quota"))) == .retry)
        emulator.revokeVendorTokens(channel: "vivo")
        let expired = await channel.send(Self.job("vivo", id))
        #expect(Self.verdict(channel, expired) == .refreshProviderTokenAndRetry)
        #expect(Self.verdict(channel, await channel.send(Self.job("vivo", id))) == .delivered)
        #expect(transport.tokenFetches == 2)
        // A cancelled ring is shown in place of the ring (vivo has no silent messages).
        let ended = await channel.send(
            Self.job("vivo", id, payload: Array(#"{"callId":"call-9","reason":"cancelled","type":"call_ended"}"#.utf8)))
        #expect(Self.verdict(channel, ended) == .delivered)
        // Nothing to show (not a data object) is never sent.
        let nothing = await channel.send(Self.job("vivo", id, payload: Array("[]".utf8)))
        #expect(nothing == .response(status: 400, reason: "NothingToShow") && Self.verdict(channel, nothing) == .fail)
        await transport.shutdown()
        let wrong = try VivoTransport(
            appID: "10001", appKey: "vivo-key", appSecret: "nope", baseURL: base, caFile: nil, connections: 1,
            requestTimeout: .seconds(10))
        guard case .transportFailure(let message) = await wrong.send(Self.job("vivo", id)) else {
            Issue.record("a refused signature is a failure to retry, with its reason")
            return
        }
        #expect(message.contains("10206"))
        await wrong.shutdown()
        await emulator.shutdown()
    }

    @Test func theStandInsAnswerOverHTTPForInboxesAndScriptedCodes() async throws {
        let (emulator, base) = try Self.emulator()
        var settings = HTTP2ClientConfiguration(baseURL: base)
        settings.priorKnowledge = true
        let control = try HTTP2Client(configuration: settings)
        for channel in ["xiaomi", "oppo", "vivo"] {
            let scripted = try await control.send(
                HTTP2Request(
                    method: "POST", path: "/\(channel)/control/faults", headers: [("content-type", "application/json")],
                    body: Array(#"{"token":"t","codes":["1"]}"#.utf8)))
            #expect(scripted.status == 204, "\(channel)")
            let empty = try await control.send(
                HTTP2Request(method: "GET", path: "/\(channel)/inbox/t?after=0", headers: [], body: []))
            let read = try JSONSerialization.jsonObject(with: Data(empty.body)) as? [String: Any]
            #expect(empty.status == 200 && (read?["messages"] as? [Any])?.count == 0)
        }
        let bad = try await control.send(
            HTTP2Request(method: "POST", path: "/oppo/control/faults", headers: [], body: Array("{}".utf8)))
        #expect(bad.status == 400)
        // Nonsense in the auth requests is refused, never a crash of the emulator.
        for timestamp in ["-9223372036854775808", "9223372036854775807", "12x", ""] {
            let oppo = try await control.send(
                HTTP2Request(
                    method: "POST", path: OPPOMessage.authPath, headers: [],
                    body: FormEncoding.body([("app_key", "oppo-key"), ("timestamp", timestamp), ("sign", "0")])))
            #expect(OPPOMessage.code(in: oppo.body) == 19, "OPPO timestamp \(timestamp)")
            let vivo = try await control.send(
                HTTP2Request(
                    method: "POST", path: VivoMessage.authPath, headers: [],
                    body: Array(
                        #"{"appId":"10001","appKey":"vivo-key","timestamp":\#(timestamp.isEmpty ? "null" : timestamp),"sign":"0"}"#
                            .utf8)))
            #expect(vivo.status == 200, "vivo timestamp \(timestamp)")
        }
        let garbage = try await control.send(
            HTTP2Request(
                method: "POST", path: OPPOMessage.unicastPath, headers: [],
                body: FormEncoding.body([("auth_token", "x"), ("message", "{not json")])))
        #expect(OPPOMessage.code(in: garbage.body) == 11)
        // A message that breaks the service's rules is refused as the service would.
        let form = FormEncoding.body([
            ("registration_id", "r"), ("restricted_package_name", "com.other.app"), ("pass_through", "1"),
            ("payload", "{}"),
        ])
        let other = try await control.send(
            HTTP2Request(
                method: "POST", path: XiaomiMessage.path, headers: [("authorization", "key=xm-secret")], body: form))
        #expect(XiaomiMessage.result(in: other.body, registrationID: "r")?.code == 22022)
        await control.shutdown()
        await emulator.shutdown()
    }
}
