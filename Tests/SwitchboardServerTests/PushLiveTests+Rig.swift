import Foundation
import Testing
import SwitchboardTesting
import SwitchboardCrypto
import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardPushCore
import SwitchboardNetSim
import Synchronization

// The rig every push live test stands on: the emulator and the servers pointed at it.
extension PushLiveTests {
    /// An emulator and a server pointed at it, with a fresh provider key; with `postgresURL`,
    /// `instances` servers on that one PostgreSQL database (`server` is the first, `others`
    /// the rest).
    // @unchecked Sendable: every stored property is a `let` of a Sendable type except `server`,
    // which only the one test that owns the rig replaces (in `crashAndRestart`), never concurrently.
    final class Rig: @unchecked Sendable {
        let directory = ScratchDirectory()
        let emulator: ServerProcess
        let inbox: HTTP2Client
        private(set) var server: ServerProcess
        private(set) var others: [ServerProcess] = []
        let serverEnvironment: [String: String]
        /// With `apnsOutages`: the TCP proxy the server reaches APNs through (none while APNs is down).
        private let apnsProxy = Mutex<ImpairmentProxy?>(nil)
        private let apnsProxyPort: Int

        /// `apnsOutages`: the server reaches the APNs stand-in through a proxy that
        /// ``stopAPNs()`` takes away (the connection breaks, new ones are refused) and
        /// ``startAPNs()`` brings back on the same port.
        init(
            serverSettings: [String: String] = [:], postgresURL: String? = nil, instances: Int = 1,
            apnsOutages: Bool = false
        ) throws {
            let key = try ES256PrivateKey.generate()
            let keyFile = directory.path + "/AuthKey.p8", publicFile = directory.path + "/key.pub",
                caFile = directory.path + "/emulator-ca.pem"
            try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
            try key.publicKeyPEM.write(toFile: publicFile, atomically: true, encoding: .utf8)
            // FCM too: the emulator learns the service account's key; the server's copy of the
            // file names the emulator's token endpoint, known once it listens.
            let fcmKey = try RS256PrivateKey.generate()
            let emulatorAccount = directory.path + "/fcm-emulator.json",
                serverAccount = directory.path + "/fcm-service-account.json"
            func serviceAccount(tokenURI: String) throws -> Data {
                try JSONSerialization.data(withJSONObject: [
                    "type": "service_account", "project_id": PushLiveTests.fcmProject, "private_key_id": "k1",
                    "private_key": try fcmKey.pkcs8PEM(),
                    "client_email": "push@\(PushLiveTests.fcmProject).iam.gserviceaccount.com",
                    "token_uri": tokenURI,
                ])
            }
            try serviceAccount(tokenURI: "https://localhost/token").write(to: URL(fileURLWithPath: emulatorAccount))
            emulator = try ServerProcess(
                .developerTools, command: "push-emulator",
                arguments: [
                    "--listen", "127.0.0.1:0", "--bundle-id", PushLiveTests.bundleID, "--team-id", PushLiveTests.teamID,
                    "--key-id", PushLiveTests.keyID, "--public-key", publicFile, "--tls", "--ca-out", caFile,
                    "--fcm-service-account", emulatorAccount, "--xiaomi-app", "com.example.phone:xm-live-secret",
                    "--oppo-app", "oppo-live-key:oppo-live-master", "--vivo-app",
                    "20001:vivo-live-key:vivo-live-secret", "--huawei-app", "\(PushLiveTests.huaweiAppID):hw-live-secret",
                ])
            let port = emulator.address.split(separator: ":").last.map(String.init) ?? "0"
            var apnsPort = port
            if apnsOutages {
                let proxy = ImpairmentProxy(
                    configuration: .init(upstream: .loopback(port: Int(port) ?? 0), profile: .good))
                apnsPort = String(try proxy.start())
                apnsProxy.withLock { $0 = proxy }
            }
            apnsProxyPort = Int(apnsPort) ?? 0
            try serviceAccount(tokenURI: "https://localhost:\(port)/token").write(
                to: URL(fileURLWithPath: serverAccount))
            var settings = HTTP2ClientConfiguration(baseURL: "https://localhost:\(port)")
            settings.caFile = caFile
            // Longer than any inbox wait a test asks for (up to 25 s, plus a loaded machine).
            settings.requestTimeout = .seconds(45)
            inbox = try HTTP2Client(configuration: settings)
            serverEnvironment = [
                "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15", "SWITCHBOARD_APNS_TEAM_ID": PushLiveTests.teamID,
                "SWITCHBOARD_APNS_KEY_ID": PushLiveTests.keyID, "SWITCHBOARD_APNS_KEY_FILE": keyFile,
                "SWITCHBOARD_APNS_PRODUCTION_URL": "https://localhost:\(apnsPort)",
                "SWITCHBOARD_APNS_SANDBOX_URL": "https://localhost:\(apnsPort)",
                "SWITCHBOARD_APNS_CA_FILE": caFile, "SWITCHBOARD_APNS_BUNDLE_ID": PushLiveTests.bundleID,
                "SWITCHBOARD_ADMIN_KEY": PushLiveTests.adminKey,
                "SWITCHBOARD_FCM_SERVICE_ACCOUNT_FILE": serverAccount,
                "SWITCHBOARD_FCM_URL": "https://localhost:\(port)",
                "SWITCHBOARD_FCM_CA_FILE": caFile,
                "SWITCHBOARD_XIAOMI_APP_SECRET": "xm-live-secret",
                "SWITCHBOARD_XIAOMI_PACKAGE_NAME": "com.example.phone",
                "SWITCHBOARD_XIAOMI_CHANNEL_ID": "calls", "SWITCHBOARD_XIAOMI_URL": "https://localhost:\(port)",
                "SWITCHBOARD_XIAOMI_CA_FILE": caFile,
                "SWITCHBOARD_OPPO_APP_KEY": "oppo-live-key", "SWITCHBOARD_OPPO_MASTER_SECRET": "oppo-live-master",
                "SWITCHBOARD_OPPO_CHANNEL_ID": "calls", "SWITCHBOARD_OPPO_URL": "https://localhost:\(port)",
                "SWITCHBOARD_OPPO_CA_FILE": caFile,
                "SWITCHBOARD_VIVO_APP_ID": "20001", "SWITCHBOARD_VIVO_APP_KEY": "vivo-live-key",
                "SWITCHBOARD_VIVO_APP_SECRET": "vivo-live-secret",
                "SWITCHBOARD_VIVO_URL": "https://localhost:\(port)", "SWITCHBOARD_VIVO_CA_FILE": caFile,
                "SWITCHBOARD_HUAWEI_APP_ID": PushLiveTests.huaweiAppID, "SWITCHBOARD_HUAWEI_APP_SECRET": "hw-live-secret",
                "SWITCHBOARD_HUAWEI_URL": "https://localhost:\(port)",
                "SWITCHBOARD_HUAWEI_TOKEN_URL": "https://localhost:\(port)/oauth2/v3/token",
                "SWITCHBOARD_HUAWEI_CA_FILE": caFile,
            ].merging(serverSettings) { $1 }.merging(
                postgresURL.map { ["SWITCHBOARD_DATABASE": "postgres", "SWITCHBOARD_POSTGRES_URL": $0] } ?? [:]
            ) { $1 }
            server = try ServerProcess(
                arguments: ["--listen", "127.0.0.1:0", "--data-dir", directory.path + "/data"],
                environment: serverEnvironment)
            for index in 1..<max(1, instances) {
                others.append(
                    try ServerProcess(
                        arguments: ["--listen", "127.0.0.1:0", "--data-dir", directory.path + "/data\(index)"],
                        environment: serverEnvironment))
            }
        }

        /// SIGKILL the server and start it again on the same data directory.
        func crashAndRestart() throws {
            server.crash()
            server = try ServerProcess(
                arguments: ["--listen", "127.0.0.1:0", "--data-dir", directory.path + "/data"],
                environment: serverEnvironment)
        }

        /// APNs goes away: the server's connection breaks and new ones are refused.
        func stopAPNs() {
            apnsProxy.withLock { proxy in
                proxy?.stop()
                proxy = nil
            }
        }

        /// APNs is back, on the same address.
        func startAPNs() throws {
            let upstream = Int(emulator.address.split(separator: ":").last.map(String.init) ?? "0") ?? 0
            let proxy = ImpairmentProxy(
                configuration: .init(
                    upstream: .loopback(port: upstream), profile: .good, listen: .loopback(port: apnsProxyPort)))
            try proxy.start()
            apnsProxy.withLock { $0 = proxy }
        }

        func close() async {
            stopAPNs()
            _ = server.stop()
            for other in others { _ = other.stop() }
            await inbox.shutdown()
            _ = emulator.stop()
            directory.remove()
        }

        /// The pushes the emulator accepted for a device token (waits up to `wait` seconds for the first).
        func pushes(for token: String, wait: Int = 10) async throws -> [[String: Any]] {
            let response = try await inbox.send(
                HTTP2Request(method: "GET", path: "/inbox/\(token)?after=0&wait=\(wait)", headers: [], body: []))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return object?["messages"] as? [[String: Any]] ?? []
        }

        /// The FCM messages the emulator accepted for an FCM token (case kept).
        func fcmMessages(for token: String, wait: Int = 10) async throws -> [[String: Any]] {
            let path =
                "/fcm/inbox/\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)?after=0&wait=\(wait)"
            let response = try await inbox.send(HTTP2Request(method: "GET", path: path, headers: [], body: []))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return object?["messages"] as? [[String: Any]] ?? []
        }

        /// The messages a vendor stand-in (`huawei`, `xiaomi`, `oppo`, `vivo`) accepted for a token.
        func vendorMessages(_ channel: String, for token: String, wait: Int = 10) async throws -> [[String: Any]] {
            let path =
                "/\(channel)/inbox/\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)?after=0&wait=\(wait)"
            let response = try await inbox.send(HTTP2Request(method: "GET", path: path, headers: [], body: []))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return object?["messages"] as? [[String: Any]] ?? []
        }

        func vendorCodes(_ channel: String, token: String, _ codes: [String]) async throws {
            let body = try JSONSerialization.data(withJSONObject: ["token": token, "codes": codes])
            let response = try await inbox.send(
                HTTP2Request(
                    method: "POST", path: "/\(channel)/control/faults", headers: [("content-type", "application/json")],
                    body: Array(body)))
            #expect(response.status < 300, "codes not accepted: \(String(decoding: response.body, as: UTF8.self))")
        }

        func fcmFault(_ json: String) async throws {
            let response = try await inbox.send(
                HTTP2Request(
                    method: "POST", path: "/fcm/control/faults", headers: [("content-type", "application/json")],
                    body: Array(json.utf8)))
            #expect(response.status < 300, "FCM fault not accepted: \(String(decoding: response.body, as: UTF8.self))")
        }

        func fault(_ json: String) async throws {
            let response = try await inbox.send(
                HTTP2Request(
                    method: "POST", path: "/control/faults", headers: [("content-type", "application/json")],
                    body: Array(json.utf8)))
            #expect(response.status < 300, "fault not accepted: \(String(decoding: response.body, as: UTF8.self))")
        }

        /// Removes the APNs stand-in's faults still in force.
        func clearFaults() async throws {
            let response = try await inbox.send(
                HTTP2Request(method: "DELETE", path: "/control/faults", headers: [], body: []))
            #expect(response.status == 204)
        }

        func adminStatus() async -> [String: Any] {
            let reply = await fetch(
                server.address, "GET", "/admin/push/status",
                headers: ["Authorization": "Bearer \(PushLiveTests.adminKey)"])
            return (try? JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any]) ?? [:]
        }

        /// Polls the admin view until `condition` holds on its outcomes (a generous bound: it
        /// normally holds within milliseconds).
        func waitForOutcome(_ condition: @escaping ([[String: Any]]) -> Bool) async throws -> Bool {
            try await eventuallyTrying { condition((await self.adminStatus()["outcomes"] as? [[String: Any]]) ?? []) }
        }

        /// The emulator's answers so far, by `"<status>"` or `"<status> <reason>"`.
        func emulatorResponses() async throws -> [String: Int] {
            let response = try await inbox.send(
                HTTP2Request(method: "GET", path: "/control/stats", headers: [], body: []))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return object?["responses"] as? [String: Int] ?? [:]
        }

        /// Waits until the emulator has given `answer` at least `count` times.
        func waitForEmulatorAnswers(_ answer: String, count: Int) async throws -> Bool {
            try await eventuallyTrying { try await self.emulatorResponses()[answer] ?? 0 >= count }
        }

        /// The value of one counter on the server's `/metrics` (0 when absent).
        func metric(_ line: String) async -> Double {
            let text = await fetch(server.address, "GET", "/metrics").body
            for row in text.split(separator: "\n") where row.hasPrefix(line + " ") {
                return Double(row.dropFirst(line.count + 1)) ?? 0
            }
            return 0
        }
    }
}
