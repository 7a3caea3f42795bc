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
    static func addFigures(
        to json: inout JSONObject, tally: Tally, count: Int, seconds: Double, cpuMilliseconds: Double
    ) {
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
                            handedOff.send(
                                provider: provider, token: token, headers: headers, payload: workload.payload)
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
            response = try await control.send(
                HTTP2Request(
                    method: "POST", path: "/control/faults", headers: [("content-type", "application/json")], body: body
                ))
        } catch {
            await control.shutdown()
            throw error
        }
        await control.shutdown()
        guard response.status < 300 else {
            throw Options.UsageError(
                message: "the emulator answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
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
