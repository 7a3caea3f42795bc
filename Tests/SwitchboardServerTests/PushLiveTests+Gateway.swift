import Foundation
import Testing
import SwitchboardTesting
import SwitchboardCrypto
import SwitchboardCore
import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardPushCore

/// The push gateway through the binaries: an app's own APNs credentials, and an app server's
/// signed signals ringing its users' devices.
extension PushLiveTests {
    /// A gateway app with its own APNs credentials (another team, key and bundle id, behind
    /// its own push service): its rings go out there, on its topic, signed with its key; the
    /// server's own push service never sees them.
    @Test func anAppWithItsOwnAPNsCredentialsRingsThroughThem() async throws {
        let rig = try Rig(serverSettings: [
            "SWITCHBOARD_DATA_ENCRYPTION_KEY": Data(SecureRandom.bytes(32)).base64EncodedString()
        ])
        let appKey = try ES256PrivateKey.generate()
        let keyFile = rig.directory.path + "/acme-AuthKey.p8", publicFile = rig.directory.path + "/acme-key.pub"
        let caFile = rig.directory.path + "/acme-ca.pem"
        try appKey.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        try appKey.publicKeyPEM.write(toFile: publicFile, atomically: true, encoding: .utf8)
        let acmeAPNs = try ServerProcess(
            .developerTools, command: "push-emulator",
            arguments: [
                "--listen", "127.0.0.1:0", "--bundle-id", "com.acme.phone", "--team-id", "ACMETEAM01", "--key-id",
                "ACMEKEY001",
                "--public-key", publicFile, "--tls", "--ca-out", caFile,
            ])
        defer { _ = acmeAPNs.stop() }
        let port = acmeAPNs.address.split(separator: ":").last.map(String.init) ?? "0"
        var settings = HTTP2ClientConfiguration(baseURL: "https://localhost:\(port)")
        settings.caFile = caFile
        settings.requestTimeout = .seconds(45)
        let acmeInbox = try HTTP2Client(configuration: settings)
        let admin = ["Authorization": "Bearer \(Self.adminKey)", "Content-Type": "application/json"]
        let acme = try await GatewayAppServer(registeringOn: rig.server.address, adminKey: Self.adminKey)
        let credentials = await fetch(
            rig.server.address, "PUT", "/admin/gateway/apps/acme/push",
            body: """
                {"settings":{"apnsBundleID":"com.acme.phone","apnsTeamID":"ACMETEAM01","apnsKeyID":"ACMEKEY001","apnsKeyFile":"\(keyFile)",
                 "apnsProductionURL":"https://localhost:\(port)","apnsSandboxURL":"https://localhost:\(port)","apnsCAFile":"\(caFile)"}}
                """, headers: admin)
        #expect(credentials.status == 200, "\(credentials.body)")
        let token = Self.deviceToken(0xa7)
        let device = try await acme.signed(
            "POST", "/gateway/v1/devices",
            #"{"userId":"bob","deviceId":"\#(UUID().uuidString)","platform":"ios","tokens":{"ios-voip":{"token":"\#(token)","environment":"production"}}}"#
        )
        #expect(device.status == 200, "\(device.body)")
        let signal = try await acme.signed(
            "POST", "/gateway/v1/signals",
            #"{"callId":"own-1","roomId":"r","type":"audio","caller":{"id":"alice","name":"Alice"},"callees":["bob"]}"#)
        #expect(signal.status == 202, "\(signal.body)")
        let response = try await acmeInbox.send(
            HTTP2Request(method: "GET", path: "/inbox/\(token)?after=0&wait=30", headers: [], body: []))
        let messages =
            (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["messages"]
            as? [[String: Any]] ?? []
        #expect(messages.count == 1, "the app's own push service took the ring")
        let payload = messages.first?["payload"] as? [String: Any]
        #expect(payload?["callId"] as? String == "own-1")
        #expect(try await rig.pushes(for: token, wait: 0).isEmpty, "the server's push service never saw it")
        await acmeInbox.shutdown()
        await rig.close()
    }

    /// The push gateway through the binaries: an app server signs a call signal; its user's
    /// iPhone, Pixel and Redmi are rung over APNs VoIP, FCM and Xiaomi; a cancel while the
    /// Pixel's retry waits drops it and tells the Redmi.
    @Test func anAppServersSignedSignalRingsItsUsersDevicesOnThreeChannelsAndACancelDropsWhatIsPending() async throws {
        let rig = try Rig()
        let acme = try await GatewayAppServer(registeringOn: rig.server.address, adminKey: Self.adminKey)
        let voip = Self.deviceToken(0xc3), fcm = "gw-fcm:Live_1", xiaomi = "gw-mi/Live+2"
        for (id, platform, brand, tokens) in [
            (UUID().uuidString, "ios", nil, #"{"ios-voip":{"token":"\#(voip)","environment":"production"}}"#),
            (UUID().uuidString, "android", "google", #"{"fcm":{"token":"\#(fcm)"}}"#),
            (
                UUID().uuidString, "android", "redmi",
                #"{"fcm":{"token":"gw-fcm-redmi"},"xiaomi":{"token":"\#(xiaomi)"}}"#
            ),
        ] as [(String, String, String?, String)] {
            let brandField = brand.map { #","brand":"\#($0)""# } ?? ""
            let registered = try await acme.signed(
                "POST", "/gateway/v1/devices",
                #"{"userId":"bob","deviceId":"\#(id)","platform":"\#(platform)"\#(brandField),"tokens":\#(tokens)}"#)
            #expect(registered.status == 200, "\(registered.body)")
        }
        func signal(_ callID: String) async throws {
            let answer = try await acme.signed(
                "POST", "/gateway/v1/signals",
                #"{"callId":"\#(callID)","roomId":"room-9","type":"audio","caller":{"id":"alice","name":"Alice"},"callees":["bob"]}"#
            )
            #expect(answer.status == 202, "\(answer.body)")
        }

        try await signal("gw-call-1")
        let push = try #require(try await rig.pushes(for: voip).first?["payload"] as? [String: Any])
        #expect(String(describing: push).contains("gw-call-1"))
        let data = try #require(
            ((try await rig.fcmMessages(for: fcm).first?["payload"] as? [String: Any])?["message"] as? [String: Any])?[
                "data"] as? [String: String])
        #expect(data["callId"] == "gw-call-1" && data["callerName"] == "Alice" && data["type"] == "call")
        let form = try #require(
            try await rig.vendorMessages("xiaomi", for: xiaomi).first?["payload"] as? [String: String])
        #expect(VendorNotification.fields(of: Array((form["payload"] ?? "").utf8))?["callId"] == "gw-call-1")

        // The Pixel's next rings meet 503s: the cancel comes while a retry waits, however slowly
        // this test gets to it on a loaded machine.
        try await rig.fcmFault(#"{"faults":[{"token":"\#(fcm)","error":"UNAVAILABLE","count":8}]}"#)
        try await signal("gw-call-2")
        #expect(try await rig.waitForEmulatorAnswers("503 UNAVAILABLE", count: 1))
        #expect(try await acme.signed("POST", "/gateway/v1/signals/gw-call-2/cancel").status == 200)
        #expect(
            try await eventuallyTrying {
                let status = try await acme.signed("GET", "/gateway/v1/signals/gw-call-2")
                let devices = (liveJSON(status.body)["devices"] as? [[String: Any]]) ?? []
                return devices.contains {
                    $0["channel"] as? String == "fcm" && $0["state"] as? String == "dropped"
                        && $0["reason"] as? String == "call_not_ringing"
                }
            })
        let pixel = try await rig.fcmMessages(for: fcm, wait: 0).compactMap {
            (($0["payload"] as? [String: Any])?["message"] as? [String: Any])?["data"] as? [String: String]
        }
        #expect(
            !pixel.contains { $0["type"] == "call" && $0["callId"] == "gw-call-2" },
            "the cancelled ring never reached the Pixel")
        #expect(
            try await eventuallyTrying {
                let last =
                    try await rig.vendorMessages("xiaomi", for: xiaomi, wait: 1).last?["payload"] as? [String: String]
                return last?["pass_through"] == "1"
                    && VendorNotification.fields(of: Array((last?["payload"] ?? "").utf8))?["reason"] == "cancelled"
            })
        await rig.close()
    }
}
