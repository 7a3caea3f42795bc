import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardObservability
import SwitchboardPushCore

// MARK: FCM

extension PushBench {
    /// `generate-fcm-account --out FILE --token-uri URL`: a service-account JSON with a fresh
    /// RSA key, for the FCM stand-in and the `fcm` run.
    static func generateFCMAccount(_ arguments: [String]) -> Int32 {
        guard arguments.count == 4, arguments[0] == "--out", arguments[2] == "--token-uri" else {
            fail("usage: push-bench generate-fcm-account --out FILE --token-uri URL")
            return 2
        }
        do {
            let key = try RS256PrivateKey.generate()
            let object: [String: String] = [
                "type": "service_account", "project_id": "switchboard-bench", "private_key_id": "bench",
                "private_key": try key.pkcs8PEM(), "client_email": "push@switchboard-bench.iam.gserviceaccount.com",
                "token_uri": arguments[3],
            ]
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(
                to: URL(fileURLWithPath: arguments[1]))
            return 0
        } catch {
            fail("cannot write \(arguments[1]): \(error)")
            return 1
        }
    }
}

/// `push-bench fcm|huawei|xiaomi|oppo|vivo`: rings through the transport the server's channel
/// of that name sends with, counted delivered by that channel's own reason table.
enum ChannelBench {
    static let channels: Set<String> = ["fcm", "huawei", "xiaomi", "oppo", "vivo"]

    static func main(channel: String, _ arguments: [String]) -> Int32 {
        var url = "", accountFile = "", app = "", caFile: String?, label: String?
        var count = 20_000, concurrency = 200, connections = 1, warmup = 2_000, tokens = 1_000
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else {
                PushBench.fail("\(flag) needs a value")
                return 2
            }
            let value = arguments[index + 1]
            let number = Int(value) ?? -1
            switch flag {
            case "--url": url = value
            case "--service-account" where channel == "fcm": accountFile = value
            case "--app" where channel != "fcm": app = value
            case "--ca-file": caFile = value
            case "--label": label = value
            case "--count" where number >= 1: count = number
            case "--concurrency" where number >= 1: concurrency = number
            case "--connections" where number >= 1: connections = number
            case "--warmup" where number >= 0: warmup = number
            case "--tokens" where number >= 1: tokens = number
            default:
                PushBench.fail("bad option '\(flag) \(value)'\n\(PushBench.usage)")
                return 2
            }
            index += 2
        }
        guard !url.isEmpty, channel == "fcm" ? !accountFile.isEmpty : !app.isEmpty else {
            PushBench.fail(
                channel == "fcm" ? "--url and --service-account are required" : "--url and --app are required")
            return 2
        }
        let rig: Rig
        let data: [UInt8]
        do {
            rig = try Rig(
                channel: channel, url: url, accountFile: accountFile, app: app, caFile: caFile, connections: connections
            )
            data = try FCMMessage.ringData(
                callID: "bench-call", scopeKind: "conversation", scopeID: "bench-conversation", mode: "audio",
                callerName: "Bench",
                groupName: nil, expiresAt: Date().addingTimeInterval(3600), now: Date())
        } catch {
            PushBench.fail("cannot set up the \(channel) transport: \(error)")
            return 1
        }
        let status = Mutex<Int32>(1)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let code = await run(
                rig, channel: channel, data: data, url: url, label: label, count: count, concurrency: concurrency,
                connections: connections, warmup: warmup, tokens: tokens)
            status.withLock { $0 = code }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }

    /// The channel's transport, its reason table and its token-fetch counter.
    struct Rig: Sendable {
        let transport: any PushTransport
        let channel: any PushChannel
        let client: String
        let tokenFetches: @Sendable () -> Int

        init(
            channel name: String, url: String, accountFile: String, app: String, caFile: String?, connections: Int
        ) throws {
            let parts = app.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            func need(_ count: Int, _ shape: String) throws {
                guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }) else {
                    throw BenchSetupError(description: "--app must be \(shape)")
                }
            }
            let timeout = Duration.seconds(10)
            switch name {
            case "fcm":
                let account = try FCMServiceAccount(
                    json: Array(try Data(contentsOf: URL(fileURLWithPath: accountFile))))
                let fcm = try FCMTransport(
                    account: account, baseURL: url, caFile: caFile, connections: connections, requestTimeout: timeout)
                (transport, channel, tokenFetches) = (fcm, FCMChannel(transport: fcm), { fcm.tokenFetches })
            case "huawei":
                try need(2, "APP_ID:SECRET")
                let huawei = try HuaweiTransport(
                    appID: parts[0], appSecret: parts[1], baseURL: url, tokenURL: url + "/oauth2/v3/token",
                    caFile: caFile,
                    connections: connections, requestTimeout: timeout)
                (transport, channel, tokenFetches) = (huawei, HuaweiChannel(transport: huawei), { huawei.tokenFetches })
            case "xiaomi":
                try need(2, "PACKAGE:SECRET")
                let xiaomi = try XiaomiTransport(
                    appSecret: parts[1], packageName: parts[0], channelID: "calls", baseURL: url, caFile: caFile,
                    connections: connections,
                    requestTimeout: timeout)
                (transport, channel, tokenFetches) = (xiaomi, VendorChannel.xiaomi(transport: xiaomi), { 0 })
            case "oppo":
                try need(2, "APP_KEY:MASTER_SECRET")
                let oppo = try OPPOTransport(
                    appKey: parts[0], masterSecret: parts[1], channelID: "calls", baseURL: url, caFile: caFile,
                    connections: connections,
                    requestTimeout: timeout)
                (transport, channel, tokenFetches) = (oppo, VendorChannel.oppo(transport: oppo), { oppo.tokenFetches })
            default:
                try need(3, "APP_ID:APP_KEY:SECRET")
                let vivo = try VivoTransport(
                    appID: parts[0], appKey: parts[1], appSecret: parts[2], baseURL: url, caFile: caFile,
                    connections: connections,
                    requestTimeout: timeout)
                (transport, channel, tokenFetches) = (vivo, VendorChannel.vivo(transport: vivo), { vivo.tokenFetches })
            }
            client = "switchboard \(String(describing: type(of: transport))) (SwitchboardPush, libcurl + nghttp2)"
        }
    }

    struct BenchSetupError: Error, CustomStringConvertible {
        let description: String
    }

    private static func run(
        _ rig: Rig, channel: String, data: [UInt8], url: String, label: String?, count: Int, concurrency: Int,
        connections: Int,
        warmup: Int, tokens: Int
    ) async -> Int32 {
        let expires = Date().addingTimeInterval(3600)
        func job(_ index: Int) -> PushJob {
            PushJob(
                id: "bench-\(index)", callID: "bench-call", userID: "bench", channel: channel,
                token: "bench-token-\(index % tokens)",
                environment: "", payload: data, headers: [], attempts: 0, expiresAt: expires)
        }
        func sendAll(_ count: Int, offset: Int) async -> Tally {
            let next = Counter()
            return await withTaskGroup(of: Tally.self) { group in
                for _ in 0..<min(concurrency, count) {
                    group.addTask {
                        var tally = Tally()
                        while true {
                            let index = next.take()
                            guard index < count else { break }
                            let start = ContinuousClock.now
                            let result = await rig.transport.send(job(offset + index))
                            // Delivered by the channel's own table (the makers answer errors with 200 too).
                            tally.record(
                                result, delivered: rig.channel.verdict(for: result).action == .delivered,
                                milliseconds: (ContinuousClock.now - start).inMilliseconds)
                        }
                        return tally
                    }
                }
                var total = Tally()
                for await part in group { total.merge(part) }
                return total
            }
        }
        if warmup > 0 {
            let warm = await sendAll(warmup, offset: 0)
            if warm.ok == 0 {
                PushBench.fail("no \(channel) message of the warm-up was delivered: \(warm.summary)")
                await rig.transport.shutdown()
                return 1
            }
        }
        let cpuBefore = PushBench.processCPUMilliseconds()
        let started = ContinuousClock.now
        let tally = await sendAll(count, offset: warmup)
        let seconds = (ContinuousClock.now - started).inSeconds
        let cpuUsed = PushBench.processCPUMilliseconds() - cpuBefore
        await rig.transport.shutdown()
        var json = JSONObject()
        json.add("client", rig.client)
        json.add("channel", channel)
        if let label { json.add("label", label) }
        json.add("url", url)
        json.add("count", count)
        json.add("warmup", warmup)
        json.add("concurrency", concurrency)
        json.add("connections", connections)
        json.add("device_tokens", tokens)
        PushBench.addFigures(to: &json, tally: tally, count: count, seconds: seconds, cpuMilliseconds: cpuUsed)
        json.add("access_tokens_fetched", rig.tokenFetches())
        print(json.text)
        return 0
    }
}
