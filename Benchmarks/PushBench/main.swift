// push-bench: push throughput and latency of SwitchboardPush's APNsProvider against an APNs
// stand-in (normally `switchboard-dev apns-emulator --tls`). Figures are printed, never asserted.
//
//   push-bench --url https://localhost:PORT --ca-file ca.pem --team-id T --key-id K \
//              --key-file key.p8 --bundle-id com.example.app \
//              [--count 20000] [--concurrency 200] [--connections 1] [--warmup 2000]
//              [--hang-percent P --hang-ms MS]
//   push-bench generate-key --p8 key.p8 --public key.pub.pem
//
// One JSON object goes to stdout: pushes/s, send→response latency p50/p90/p99/max in ms,
// answers per status, transport failures and the process's CPU time during the measured run.
// Errors go to stderr. See bench/README.md, "Push benchmark".
//
// Wiring only at top level: top-level code in main.swift is MainActor-isolated, so the work
// runs in `PushBench` (nonisolated) and the async part in a detached task that the main thread
// waits for with a semaphore; the main thread never runs, or waits for, a MainActor task.
import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardObservability

exit(PushBench.main(Array(CommandLine.arguments.dropFirst())))

/// The command: parses options, then either writes a key pair or runs the benchmark.
enum PushBench {
    static let usage = """
        usage: push-bench --url https://HOST:PORT --ca-file FILE --team-id ID --key-id ID
                          --key-file FILE.p8 [--bundle-id ID] [--count N] [--concurrency C]
                          [--connections K] [--streams-per-connection S] [--warmup N]
                          [--tokens N] [--timeout-ms MS] [--label TEXT]
                          [--hang-percent P] [--hang-ms MS]
               push-bench generate-key --p8 FILE --public FILE
               push-bench fcm --url URL --service-account FILE [--ca-file FILE] [--count N]
                          [--concurrency C] [--connections K] [--warmup N] [--tokens N] [--label TEXT]
               push-bench generate-fcm-account --out FILE --token-uri URL
               push-bench huawei|xiaomi|oppo|vivo --url URL --app CREDENTIALS [--ca-file FILE]
                          [--count N] [--concurrency C] [--connections K] [--warmup N] [--tokens N]
                          [--label TEXT]

        fcm               FCM HTTP v1 messages (ring data messages) through the server's FCM transport
                          (OAuth2 access token included) to an FCM stand-in
                          (`switchboard-dev push-emulator --fcm-service-account FILE`)
        huawei, xiaomi, oppo, vivo
                          rings through the server's transport for that maker (its auth token
                          included) to the push emulator's stand-in, started with the same
                          --app value: huawei APP_ID:SECRET, xiaomi PACKAGE:SECRET,
                          oppo APP_KEY:MASTER_SECRET, vivo APP_ID:APP_KEY:SECRET

        --hang-percent P  the emulator holds the answers for P % of the device tokens (so P % of
                          the pushes) for --hang-ms (default 15000, past the 10 s deadline); a
                          sender hands such a push off and goes on, as the server's dispatcher
                          does, and the figures are those of the other pushes, which must not
                          slow down (`hung_*` figures count the held ones)
        """

    /// Runs the command synchronously and returns the exit status (0 ran, 1 failed, 2 usage).
    static func main(_ arguments: [String]) -> Int32 {
        if arguments.contains("-h") || arguments.contains("--help") {
            print(usage)
            return 0
        }
        if arguments.first == "generate-key" {
            return generateKey(Array(arguments.dropFirst()))
        }
        if arguments.first == "generate-fcm-account" {
            return generateFCMAccount(Array(arguments.dropFirst()))
        }
        if let first = arguments.first, ChannelBench.channels.contains(first) {
            return ChannelBench.main(channel: first, Array(arguments.dropFirst()))
        }
        let options: Options
        do {
            options = try Options(parsing: arguments)
        } catch {
            fail("\(error.message)\n\(usage)")
            return 2
        }
        let status = Mutex<Int32>(1)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let code = await run(options)
            status.withLock { $0 = code }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }

    // MARK: The benchmark

    private static func run(_ options: Options) async -> Int32 {
        let key: ES256PrivateKey
        do {
            let pem = try String(contentsOfFile: options.keyFile, encoding: .utf8)
            key = try ES256PrivateKey(pem: pem)
        } catch {
            fail("cannot read the .p8 key \(options.keyFile): \(error)")
            return 1
        }
        let workload: Workload
        do {
            workload = try Workload(bundleID: options.bundleID, tokens: options.tokens)
        } catch {
            fail("cannot build the VoIP push: \(error)")
            return 1
        }
        let provider: APNsProvider
        do {
            provider = try APNsProvider(
                configuration: APNsConfiguration(
                    credentials: .token(teamID: options.teamID, keyID: options.keyID, key: key),
                    productionURL: options.url, sandboxURL: options.url, caFile: options.caFile,
                    connectionsPerEnvironment: options.connections,
                    maxConcurrentStreams: options.streamsPerConnection,
                    requestTimeout: .milliseconds(options.timeoutMilliseconds)))
        } catch {
            fail("cannot create the APNs provider: \(error)")
            return 1
        }

        if options.hangPercent > 0 {
            do {
                try await installHangs(options, workload: workload)
            } catch {
                fail("cannot install the delay faults on the emulator: \(error)")
                await provider.shutdown()
                return 1
            }
        }

        // Warm-up: connections, TLS, the provider token and both sides' caches; not counted.
        // (Its held pushes are still open when the measured run starts, as in steady state.)
        let handedOff = HandedOff()
        if options.warmup > 0 {
            let warm = await sendAll(
                count: options.warmup, offset: 0, concurrency: options.concurrency, provider: provider,
                workload: workload, hangEvery: options.hangEvery, handedOff: handedOff)
            if warm.ok == 0 {
                fail("no push of the warm-up was answered 200: \(warm.summary)")
                await provider.shutdown()
                return 1
            }
        }

        let cpuBefore = processCPUMilliseconds()
        let started = ContinuousClock.now
        let tally = await sendAll(
            count: options.count, offset: options.warmup, concurrency: options.concurrency, provider: provider,
            workload: workload, hangEvery: options.hangEvery, handedOff: handedOff)
        let elapsed = ContinuousClock.now - started
        let cpuUsed = processCPUMilliseconds() - cpuBefore
        let hung = await handedOff.wait()
        await provider.shutdown()

        let seconds = elapsed.inSeconds
        var json = JSONObject()
        json.add("client", "switchboard APNsProvider (SwitchboardPush, libcurl + nghttp2)")
        if let label = options.label { json.add("label", label) }
        json.add("url", options.url)
        json.add("count", options.count)
        json.add("warmup", options.warmup)
        json.add("concurrency", options.concurrency)
        json.add("connections", options.connections)
        json.add("streams_per_connection", options.streamsPerConnection)
        json.add("device_tokens", options.tokens)
        addFigures(to: &json, tally: tally, count: options.count, seconds: seconds, cpuMilliseconds: cpuUsed)
        json.add("hang_percent", options.hangPercent)
        json.add("hung_pushes", hung.latencies.count)  // warm-up's and measured run's
        json.add("hung_statuses", hung.statuses.mapValues { Double($0) })
        json.add("hung_failures", hung.failures.mapValues { Double($0) })
        print(json.text)
        return 0
    }

    /// The figures every run reports: rate, latency percentiles, answers, client CPU.
    static func addFigures(to json: inout JSONObject, tally: Tally, count: Int, seconds: Double, cpuMilliseconds: Double) {
        var latencies = tally.latencies
        latencies.sort()
        json.add("seconds", rounded(seconds, 3))
        json.add("pushes_per_second", rounded(seconds > 0 ? Double(count) / seconds : 0, 0))
        json.add("p50_ms", rounded(percentile(latencies, 0.50), 3))
        json.add("p90_ms", rounded(percentile(latencies, 0.90), 3))
        json.add("p99_ms", rounded(percentile(latencies, 0.99), 3))
        json.add("max_ms", rounded(latencies.last ?? 0, 3))
        json.add("over_1s", latencies.count { $0 >= 1000 })
        json.add("ok", tally.ok)
        json.add("statuses", tally.statuses.mapValues { Double($0) })
        json.add("failures", tally.failures.mapValues { Double($0) })
        json.add("failure_examples", tally.failureExamples)
        json.add("client_cpu_ms", rounded(cpuMilliseconds, 0))
    }

    /// Sends pushes `offset ..< offset + count` with `concurrency` senders, each sending its next
    /// push as soon as its previous one was answered. With `hangEvery` > 0 a push to a held token
    /// (token index divisible by it) is handed off to `handedOff` and not waited for.
    private static func sendAll(
        count: Int, offset: Int, concurrency: Int, provider: APNsProvider, workload: Workload, hangEvery: Int,
        handedOff: HandedOff = HandedOff()
    ) async -> Tally {
        let next = Counter()
        return await withTaskGroup(of: Tally.self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask {
                    var tally = Tally()
                    tally.latencies.reserveCapacity(count / max(concurrency, 1) + 16)
                    // Bounded: every pass takes a new index, and the loop ends at `count`.
                    while true {
                        let index = next.take()
                        guard index < count else { break }
                        let (token, headers) = workload.push(offset + index)
                        if hangEvery > 0, workload.tokenIndex(offset + index) % hangEvery == 0 {
                            handedOff.send(provider: provider, token: token, headers: headers, payload: workload.payload)
                            continue
                        }
                        let start = ContinuousClock.now
                        let result = await provider.send(
                            deviceToken: token, environment: "production", headers: headers,
                            payload: workload.payload)
                        tally.record(result, milliseconds: (ContinuousClock.now - start).inMilliseconds)
                    }
                    return tally
                }
            }
            var total = Tally()
            for await part in group { total.merge(part) }
            return total
        }
    }

    /// Asks the emulator (`POST /control/faults`) to hold the answers of every held token.
    private static func installHangs(_ options: Options, workload: Workload) async throws {
        var settings = HTTP2ClientConfiguration(baseURL: options.url)
        settings.caFile = options.caFile
        let control = try HTTP2Client(configuration: settings)
        let faults = workload.tokens(every: options.hangEvery).map {
            #"{"kind":"delay","milliseconds":\#(options.hangMilliseconds),"token":"\#($0)"}"#
        }
        let body = Array("[\(faults.joined(separator: ","))]".utf8)
        let response: HTTP2Response
        do {
            response = try await control.send(HTTP2Request(
                method: "POST", path: "/control/faults", headers: [("content-type", "application/json")], body: body))
        } catch {
            await control.shutdown()
            throw error
        }
        await control.shutdown()
        guard response.status < 300 else {
            throw Options.UsageError(message: "the emulator answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    // MARK: generate-key

    private static func generateKey(_ arguments: [String]) -> Int32 {
        var p8: String?
        var publicPEM: String?
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else {
                fail("\(flag) needs a value\n\(usage)")
                return 2
            }
            switch flag {
            case "--p8": p8 = arguments[index + 1]
            case "--public": publicPEM = arguments[index + 1]
            default:
                fail("unknown option '\(flag)'\n\(usage)")
                return 2
            }
            index += 2
        }
        guard let p8, let publicPEM else {
            fail("generate-key needs --p8 FILE and --public FILE\n\(usage)")
            return 2
        }
        do {
            let key = try ES256PrivateKey.generate()
            try Data(try key.pkcs8PEM().utf8).write(to: URL(fileURLWithPath: p8))
            chmod(p8, 0o600)
            try Data(key.publicKeyPEM.utf8).write(to: URL(fileURLWithPath: publicPEM))
        } catch {
            fail("cannot write the key pair: \(error)")
            return 1
        }
        return 0
    }

    // MARK: Helpers

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("push-bench: \(message)\n".utf8))
    }

    /// User + system CPU time of this process so far, in milliseconds.
    static func processCPUMilliseconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func ms(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return ms(usage.ru_utime) + ms(usage.ru_stime)
    }

    /// Nearest-rank percentile of ascending `sorted` values (0 when empty).
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        // The epsilon keeps 0.99 × 20,000 at rank 19,800 despite binary rounding (as the Python client).
        let rank = Int((fraction * Double(sorted.count) - 1e-9).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    static func rounded(_ value: Double, _ decimals: Int) -> Double {
        let scale = pow(10, Double(decimals))
        return (value * scale).rounded() / scale
    }
}

/// The command-line options of a benchmark run.
struct Options {
    struct UsageError: Error {
        let message: String
    }

    var url = ""
    var caFile: String?
    var teamID = ""
    var keyID = ""
    var keyFile = ""
    var bundleID = "com.example.switchboard"
    var count = 20_000
    var concurrency = 200
    var connections = 1
    /// Streams one connection may carry; by default concurrency / connections (rounded up), so
    /// libcurl has to spread the senders over every connection instead of multiplexing them all
    /// on the first.
    var streamsPerConnection = 0
    var warmup = 2_000
    var tokens = 1_000
    var timeoutMilliseconds = 10_000
    var label: String?
    /// Percent of the device tokens whose answers the emulator holds (0 = none).
    var hangPercent = 0
    var hangMilliseconds = 15_000
    /// Every how many tokens one is held (0 = none).
    var hangEvery: Int { hangPercent > 0 ? max(1, 100 / hangPercent) : 0 }

    init(parsing arguments: [String]) throws(UsageError) {
        var index = 0
        func value(_ flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        func number(_ flag: String, minimum: Int) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), number >= minimum else {
                throw UsageError(message: "\(flag) needs an integer >= \(minimum), not '\(text)'")
            }
            return number
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--url": url = try value(flag)
            case "--ca-file": caFile = try value(flag)
            case "--team-id": teamID = try value(flag)
            case "--key-id": keyID = try value(flag)
            case "--key-file": keyFile = try value(flag)
            case "--bundle-id": bundleID = try value(flag)
            case "--count": count = try number(flag, minimum: 1)
            case "--concurrency": concurrency = try number(flag, minimum: 1)
            case "--connections": connections = try number(flag, minimum: 1)
            case "--streams-per-connection": streamsPerConnection = try number(flag, minimum: 1)
            case "--warmup": warmup = try number(flag, minimum: 0)
            case "--tokens": tokens = try number(flag, minimum: 1)
            case "--timeout-ms": timeoutMilliseconds = try number(flag, minimum: 1)
            case "--label": label = try value(flag)
            case "--hang-percent": hangPercent = try number(flag, minimum: 0)
            case "--hang-ms": hangMilliseconds = try number(flag, minimum: 1)
            default: throw UsageError(message: "unknown option '\(flag)'")
            }
            index += 1
        }
        guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw UsageError(message: "--url must be https://HOST:PORT (or http:// for h2c)")
        }
        guard !teamID.isEmpty, !keyID.isEmpty, !keyFile.isEmpty else {
            throw UsageError(message: "--team-id, --key-id and --key-file are required")
        }
        guard hangPercent <= 50 else { throw UsageError(message: "--hang-percent must be 0 to 50") }
        if streamsPerConnection == 0 {
            streamsPerConnection = (concurrency + connections - 1) / connections
        }
    }
}

/// The pushes to send: one VoIP push (SPEC §3, built by `VoIPPush`), sent to `tokens` device
/// tokens in turn, each with its own `apns-id`.
struct Workload: Sendable {
    let payload: [UInt8]
    private let headers: [(String, String)]
    private let apnsIDIndex: Int
    private let tokens: [String]

    init(bundleID: String, tokens count: Int) throws {
        let now = Date()
        let push = try VoIPPush.build(
            callID: "0b7c2f5e-6a61-4d47-9a3e-2f4c1d8e9b10", scopeKind: "conversation",
            scopeID: "9d1e4a7b-3c2f-4e5a-8b6d-1f0e2d3c4b5a", mode: "audio", callerName: "Bench Caller",
            groupName: nil, bundleID: bundleID, apnsID: "00000000-0000-4000-8000-000000000000",
            expiresAt: now.addingTimeInterval(3600), now: now)
        payload = push.payload
        headers = push.headers
        guard let index = push.headers.firstIndex(where: { $0.0 == "apns-id" }) else {
            throw WorkloadError.noApnsID
        }
        apnsIDIndex = index
        // 64 hex digits, distinct per device: "00…01", "00…02", …
        tokens = (1...count).map { number in
            let hex = String(number, radix: 16)
            return String(repeating: "0", count: 64 - hex.count) + hex
        }
    }

    enum WorkloadError: Error {
        case noApnsID
    }

    /// The index of push number `index`'s device token.
    func tokenIndex(_ index: Int) -> Int { index % tokens.count }

    /// Every `every`-th device token (indices 0, every, 2 × every, …).
    func tokens(every: Int) -> [String] {
        guard every > 0 else { return [] }
        return stride(from: 0, to: tokens.count, by: every).map { tokens[$0] }
    }

    /// Push number `index`: its device token and its headers with a fresh `apns-id`.
    func push(_ index: Int) -> (token: String, headers: [(String, String)]) {
        var headers = headers
        headers[apnsIDIndex].1 = UUID().uuidString.lowercased()
        return (tokens[index % tokens.count], headers)
    }
}

/// The pushes handed off without waiting (to held tokens), and what became of them.
final class HandedOff: Sendable {
    private let state = Mutex<(tasks: [Task<(APNsResult, Double), Never>], done: Bool)>(([], false))

    func send(provider: APNsProvider, token: String, headers: [(String, String)], payload: [UInt8]) {
        let task = Task {
            let start = ContinuousClock.now
            let result = await provider.send(deviceToken: token, environment: "production", headers: headers, payload: payload)
            return (result, (ContinuousClock.now - start).inMilliseconds)
        }
        state.withLock { $0.tasks.append(task) }
    }

    /// Waits for every handed-off push and tallies them.
    func wait() async -> Tally {
        let tasks = state.withLock { $0.tasks }
        var tally = Tally()
        for task in tasks {
            let (result, milliseconds) = await task.value
            tally.record(result, milliseconds: milliseconds)
        }
        return tally
    }
}

/// Hands out increasing indices to the senders.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    func take() -> Int {
        value.add(1, ordering: .relaxed).oldValue
    }
}

/// What one sender (or all of them, merged) saw.
struct Tally: Sendable {
    var latencies: [Double] = []
    var statuses: [String: Int] = [:]
    var failures: [String: Int] = [:]
    /// The first full detail seen per failure code (libcurl's message).
    var failureExamples: [String: String] = [:]
    var ok = 0

    /// A channel's answer; `delivered` as its reason table reads it.
    mutating func record(_ result: PushSendResult, delivered: Bool, milliseconds: Double) {
        switch result {
        case .response(let status, let reason, _):
            record(.response(status: status, reason: reason, apnsID: nil), milliseconds: milliseconds)
            if status == 200, !delivered { ok -= 1 }
        case .transportFailure(let detail): record(APNsResult.transportFailure(detail), milliseconds: milliseconds)
        }
    }

    mutating func record(_ result: APNsResult, milliseconds: Double) {
        latencies.append(milliseconds)
        switch result {
        case .response(let status, let reason, _):
            statuses[reason.map { "\(status) \($0)" } ?? String(status), default: 0] += 1
            if status == 200 { ok += 1 }
        case .transportFailure(let detail):
            // "timed_out", "connection_failed: …": keep the code, drop the per-request detail.
            let code = detail.split(separator: ":", maxSplits: 1).first.map(String.init) ?? detail
            failures[code, default: 0] += 1
            if failureExamples[code] == nil { failureExamples[code] = detail }
        }
    }

    mutating func merge(_ other: Tally) {
        latencies.append(contentsOf: other.latencies)
        statuses.merge(other.statuses, uniquingKeysWith: +)
        failures.merge(other.failures, uniquingKeysWith: +)
        failureExamples.merge(other.failureExamples) { first, _ in first }
        ok += other.ok
    }

    var summary: String {
        "statuses \(statuses), failures \(failures)"
    }
}

/// A flat JSON object written by hand (keys in insertion order, numbers and strings only).
struct JSONObject {
    private var members: [String] = []

    mutating func add(_ key: String, _ value: String) {
        members.append("\(Self.quoted(key)):\(Self.quoted(value))")
    }

    mutating func add(_ key: String, _ value: Int) {
        members.append("\(Self.quoted(key)):\(value)")
    }

    mutating func add(_ key: String, _ value: Double) {
        let text = value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        members.append("\(Self.quoted(key)):\(text)")
    }

    mutating func add(_ key: String, _ value: [String: String]) {
        var inner = JSONObject()
        for (name, text) in value.sorted(by: { $0.key < $1.key }) { inner.add(name, text) }
        members.append("\(Self.quoted(key)):\(inner.text)")
    }

    mutating func add(_ key: String, _ value: [String: Double]) {
        var inner = JSONObject()
        for (name, number) in value.sorted(by: { $0.key < $1.key }) { inner.add(name, number) }
        members.append("\(Self.quoted(key)):\(inner.text)")
    }

    var text: String { "{" + members.joined(separator: ",") + "}" }

    private static func quoted(_ text: String) -> String { "\"" + JSONText.escape(text) + "\"" }
}

extension Duration {
    /// The duration in (fractional) seconds.
    var inSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// The duration in (fractional) milliseconds.
    var inMilliseconds: Double { inSeconds * 1000 }
}

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
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(to: URL(fileURLWithPath: arguments[1]))
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
            PushBench.fail(channel == "fcm" ? "--url and --service-account are required" : "--url and --app are required")
            return 2
        }
        let rig: Rig
        let data: [UInt8]
        do {
            rig = try Rig(channel: channel, url: url, accountFile: accountFile, app: app, caFile: caFile, connections: connections)
            data = try FCMMessage.ringData(
                callID: "bench-call", scopeKind: "conversation", scopeID: "bench-conversation", mode: "audio", callerName: "Bench",
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

        init(channel name: String, url: String, accountFile: String, app: String, caFile: String?, connections: Int) throws {
            let parts = app.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            func need(_ count: Int, _ shape: String) throws {
                guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }) else { throw BenchSetupError(description: "--app must be \(shape)") }
            }
            let timeout = Duration.seconds(10)
            switch name {
            case "fcm":
                let account = try FCMServiceAccount(json: Array(try Data(contentsOf: URL(fileURLWithPath: accountFile))))
                let fcm = try FCMTransport(account: account, baseURL: url, caFile: caFile, connections: connections, requestTimeout: timeout)
                (transport, channel, tokenFetches) = (fcm, FCMChannel(transport: fcm), { fcm.tokenFetches })
            case "huawei":
                try need(2, "APP_ID:SECRET")
                let huawei = try HuaweiTransport(
                    appID: parts[0], appSecret: parts[1], baseURL: url, tokenURL: url + "/oauth2/v3/token", caFile: caFile,
                    connections: connections, requestTimeout: timeout)
                (transport, channel, tokenFetches) = (huawei, HuaweiChannel(transport: huawei), { huawei.tokenFetches })
            case "xiaomi":
                try need(2, "PACKAGE:SECRET")
                let xiaomi = try XiaomiTransport(
                    appSecret: parts[1], packageName: parts[0], channelID: "calls", baseURL: url, caFile: caFile, connections: connections,
                    requestTimeout: timeout)
                (transport, channel, tokenFetches) = (xiaomi, VendorChannel.xiaomi(transport: xiaomi), { 0 })
            case "oppo":
                try need(2, "APP_KEY:MASTER_SECRET")
                let oppo = try OPPOTransport(
                    appKey: parts[0], masterSecret: parts[1], channelID: "calls", baseURL: url, caFile: caFile, connections: connections,
                    requestTimeout: timeout)
                (transport, channel, tokenFetches) = (oppo, VendorChannel.oppo(transport: oppo), { oppo.tokenFetches })
            default:
                try need(3, "APP_ID:APP_KEY:SECRET")
                let vivo = try VivoTransport(
                    appID: parts[0], appKey: parts[1], appSecret: parts[2], baseURL: url, caFile: caFile, connections: connections,
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
        _ rig: Rig, channel: String, data: [UInt8], url: String, label: String?, count: Int, concurrency: Int, connections: Int,
        warmup: Int, tokens: Int
    ) async -> Int32 {
        let expires = Date().addingTimeInterval(3600)
        func job(_ index: Int) -> PushJob {
            PushJob(
                id: "bench-\(index)", callID: "bench-call", userID: "bench", channel: channel, token: "bench-token-\(index % tokens)",
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
                            tally.record(result, delivered: rig.channel.verdict(for: result).action == .delivered,
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
