import Foundation
import Glibc
import Synchronization
import SwitchboardHTTP
import SwitchboardKit
import SwitchboardPOSIX
import SwitchboardTesting
import SwitchboardWire

/// `switchboard-dev bench relay`: the built-in audio relay under load, against the real server
/// binary (its CPU measured from /proc), and the WebSocket path beside an independent server.
public enum RelayBench {
    public static let help = """
        Usage: switchboard-dev bench relay --server PATH [--calls LIST] [--seconds N] [--echo-anchor SCRIPT] [--out FILE]

        Starts PATH (the switchboard binary) on 127.0.0.1 with a temporary database, sets up
        1:1 calls with both participants' audio sockets open, and for each count in LIST
        (default 10,50,100,150,200,300) sends a 320-byte frame every 20 ms on every socket for N
        seconds (default 10). Each frame carries its send time and a sequence number; the other side's
        arrivals give the relay's frame loss and its added latency (client to relay to client,
        loopback). The server's CPU time comes from /proc/PID/stat.
        Then the WebSocket path alone, 5 rounds alternating with the anchor: frames forwarded per
        second through the relay with 8 in flight, and the same client against SCRIPT (an echo server on Python's websockets, run
        as `python3 SCRIPT`, printing its port), measured the same way.
        Prints one table; with --out, the figures as bench-summary rows (TSV).
        All traffic stays on loopback; the server and the anchor are stopped at the end.
        """

    struct Options: Sendable {
        var server = ""
        var calls = [10, 50, 100, 150, 200, 300]
        var seconds = 10
        var echoAnchor: String?
        var out: String?
    }

    public static func run(_ arguments: [String]) -> Int32 {
        var options = Options()
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--server": options.server = value() ?? ""
            case "--calls":
                options.calls = (value() ?? "").split(separator: ",").compactMap { Int($0) }.filter {
                    (1...500).contains($0)
                }
            case "--seconds": options.seconds = Int(value() ?? "") ?? 0
            case "--echo-anchor": options.echoAnchor = value()
            case "--out": options.out = value()
            case "-h", "--help":
                print(help)
                return 0
            default:
                FileHandle.standardError.write(
                    Data("switchboard-dev bench relay: unknown option '\(arguments[index])'\n".utf8))
                return 2
            }
            index += 1
        }
        guard !options.server.isEmpty, !options.calls.isEmpty, (1...600).contains(options.seconds) else {
            FileHandle.standardError.write(
                Data(
                    "switchboard-dev bench relay: --server PATH is required; --calls 1-500 each; --seconds 1-600\n".utf8
                ))
            return 2
        }
        let chosen = options
        return waitForExitCode {
            do {
                try await bench(chosen)
                return 0
            } catch {
                FileHandle.standardError.write(Data("switchboard-dev bench relay: \(error)\n".utf8))
                return 1
            }
        }
    }

    /// Alternating rounds of the WebSocket path against its anchor.
    static let pathRounds = 5

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// A line now, also when stdout is a pipe.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// One count's figures.
    struct Round {
        var calls: Int
        var sent: Int
        var received: Int
        var p50: Double
        var p99: Double
        var serverCPUSeconds: Double
        /// The load client's (this process's) CPU over the round.
        var clientCPUSeconds: Double
        var seconds: Double
        var lossPercent: Double { sent == 0 ? 0 : 100 * Double(max(0, sent - received)) / Double(sent) }
        /// Server CPU as a share of one core, per call.
        var cpuPerCallPercent: Double { 100 * serverCPUSeconds / seconds / Double(calls) }
        /// Within the capacity target: under 5 % of the frames lost, and the relay adds under
        /// 50 ms at the 99th percentile.
        var withinTarget: Bool { lossPercent < 5 && p99 < 50 }
    }

    static func bench(_ options: Options) async throws {
        let server = try ServerChild(binary: options.server)
        defer { server.stop() }
        let base = URL(string: "http://\(server.address)")!
        say("relay bench: server \(server.address) (pid \(server.pid)), \(options.seconds) s per round")
        let most = options.calls.max() ?? 0
        var pairs: [(WebSocketClient, WebSocketClient)] = []
        let meter = Meter()
        var rounds: [Round] = []
        for count in options.calls.sorted() {
            while pairs.count < count {
                pairs.append(try await openCall(base: base, server: server.address, index: pairs.count, meter: meter))
            }
            let active = Array(pairs.prefix(count))
            rounds.append(try await round(active, seconds: options.seconds, meter: meter, server: server))
            let last = rounds[rounds.count - 1]
            say(
                String(
                    format:
                        "  %3d calls: %6d frames, loss %.2f %%, added latency p50 %.2f ms p99 %.2f ms, server CPU %.1f %% of a core (%.3f %% per call), load client CPU %.1f %% of a core",
                    count, last.sent, last.lossPercent, last.p50, last.p99, 100 * last.serverCPUSeconds / last.seconds,
                    last.cpuPerCallPercent, 100 * last.clientCPUSeconds / last.seconds))
        }
        _ = most
        for (a, b) in pairs {
            a.close()
            b.close()
        }
        // The WebSocket path alone: 8 frames in flight, relay forwarding against an echo anchor,
        // round by round (ours, echo, ours, ...), the ratio judged on the per-round ratios.
        let echo = try options.echoAnchor.map { try EchoAnchor(script: $0) }
        defer { echo?.stop() }
        var oursRates: [Double] = [], anchorRates: [Double] = []
        for _ in 0..<Self.pathRounds {
            oursRates.append(try await windowedRate(through: base, server: server.address, meter: meter))
            if let echo { anchorRates.append(try await windowedRateEcho(port: echo.port)) }
        }
        let ours = Self.median(oursRates)
        say(
            "  WebSocket frames forwarded by the relay, 8 in flight: "
                + oursRates.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " frames/s")
        let ratios = zip(oursRates, anchorRates).map { $0 / max(1, $1) }
        let anchor = anchorRates.isEmpty ? nil : Self.median(anchorRates)
        if !anchorRates.isEmpty {
            say(
                "  the same client against Python websockets echo: "
                    + anchorRates.map { String(format: "%.0f", $0) }.joined(separator: ", ")
                    + String(format: " frames/s (median of the per-round ratios %.2f)", Self.median(ratios)))
        }
        if let out = options.out {
            var rows: [String] = []
            let passing = rounds.filter(\.withinTarget).map(\.calls).max() ?? 0
            let tried = rounds.map { String($0.calls) }.joined(separator: ",")
            rows.append(
                "capacity: relay 1:1 calls at < 5 % frame loss and added p99 < 50 ms (of \(tried) tried)\t\(passing)\t≥ 100\t\(passing >= 100 ? "met" : "NOT met")\t—\t—\t—"
            )
            if let top = rounds.last {
                rows.append(
                    String(
                        format: "relay: added latency p50 / p99 at %d calls (ms)\t%.2f / %.2f\t—\t—\t—\t—\t—",
                        top.calls, top.p50, top.p99))
                rows.append(
                    String(
                        format: "relay: server CPU per call (%% of a core)\t%.3f\t—\t—\t—\t—\t—", top.cpuPerCallPercent)
                )
                rows.append(
                    String(
                        format: "relay: the load client's own CPU at %d calls (%% of a core)\t%.1f\t—\t—\t—\t—\t—",
                        top.calls, 100 * top.clientCPUSeconds / top.seconds))
                rows.append(
                    String(
                        format: "relay: frame loss at %d calls (%%)\t%.2f\t< 5\t%@\t—\t—\t—", top.calls,
                        top.lossPercent, top.lossPercent < 5 ? "met" : "NOT met"))
            }
            if let anchor {
                rows.append(
                    String(
                        format:
                            "WebSocket frames/s, 8 in flight (relay forward vs echo)\t%.0f\t—\t—\tPython websockets echo\t%.0f\t%.2f\t%.2f–%.2f\t%d",
                        ours, anchor, Self.median(ratios), ratios.min() ?? 0, ratios.max() ?? 0, ratios.count))
            } else {
                rows.append(
                    String(
                        format: "WebSocket frames/s, 8 in flight (relay forward)\t%.0f\t—\t—\t—\t—\t—\t%.0f–%.0f\t%d",
                        ours,
                        oursRates.min() ?? 0, oursRates.max() ?? 0, oursRates.count))
            }
            try (rows.joined(separator: "\n") + "\n").write(toFile: out, atomically: true, encoding: .utf8)
        }
    }

    // MARK: Calls

    /// Two new users, friends, in a call both have answered; their audio sockets open.
    static func openCall(
        base: URL, server: String, index: Int, meter: Meter
    ) async throws -> (WebSocketClient, WebSocketClient) {
        let tag = "r\(index)x\(UInt32.random(in: 0...UInt32.max))"
        let anonymous = SwitchboardClient(baseURL: base, token: nil)
        let caller = try await anonymous.register(
            username: "a\(tag)", password: "long enough password", displayName: "A")
        let callee = try await anonymous.register(
            username: "b\(tag)", password: "long enough password", displayName: "B")
        let a = SwitchboardClient(baseURL: base, token: caller.token),
            b = SwitchboardClient(baseURL: base, token: callee.token)
        let request = try await a.sendFriendRequest(toUserID: callee.user.id)
        let conversation = try await b.acceptFriendRequest(request.id).conversationId
        let call = try await a.createCall(scopeKind: .conversation, scopeID: conversation, mode: .audio)
        guard let calleeToken = try await b.accept(call.id, withMediaToken: true).media else {
            throw BenchError("no media token")
        }
        let callerToken = try await a.mediaToken(forCall: call.id)
        let parts = server.split(separator: ":")
        let host = String(parts[0]), port = Int(parts[1]) ?? 0
        func open(_ token: MediaToken, _ side: Int) async throws -> WebSocketClient {
            try await offPool {
                try WebSocketClient.connect(
                    host: host, port: port, path: token.url, headers: ["Authorization": "Bearer \(token.token)"],
                    handlers: .init(onMessage: { message in
                        if case .binary(let bytes) = message { meter.arrived(bytes, socket: index * 2 + side) }
                    }))
            }
        }
        return (try await open(callerToken, 0), try await open(calleeToken, 1))
    }

    /// Arrivals: latencies and counts, from every socket's reader thread.
    final class Meter: Sendable {
        private let state = Mutex<(latencies: [Double], received: Int, measuring: Bool)>(([], 0, false))

        func arrived(_ frame: [UInt8], socket: Int) {
            guard frame.count >= 8 else { return }
            var sent: UInt64 = 0
            for index in 0..<8 { sent |= UInt64(frame[index]) << (8 * UInt64(index)) }
            let latency = Double(monotonicNanoseconds() &- sent) / 1e6
            state.withLock { state in
                guard state.measuring else { return }
                state.received += 1
                state.latencies.append(latency)
            }
        }

        func start() { state.withLock { $0 = ([], 0, true) } }
        func stop() -> (latencies: [Double], received: Int) {
            state.withLock { state in
                state.measuring = false
                return (state.latencies, state.received)
            }
        }
        var received: Int { state.withLock { $0.received } }
    }

    static func frame() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 320)
        let now = monotonicNanoseconds()
        for index in 0..<8 { bytes[index] = UInt8((now >> (8 * UInt64(index))) & 0xFF) }
        return bytes
    }

    static func round(
        _ pairs: [(WebSocketClient, WebSocketClient)], seconds: Int, meter: Meter, server: ServerChild
    ) async throws -> Round {
        let sockets = pairs.flatMap { [$0.0, $0.1] }
        meter.start()
        let cpuBefore = try server.cpuSeconds()
        let clientBefore = ownCPUSeconds()
        let started = monotonicSeconds()
        let sent = await offPool { () -> Int in
            var sent = 0
            let steps = seconds * 50
            let start = monotonicNanoseconds()
            for step in 0..<steps {
                let due = start + UInt64(step) * 20_000_000
                let now = monotonicNanoseconds()
                if due > now { usleep(UInt32((due - now) / 1000)) }
                for socket in sockets where socket.send(.binary(frame())) { sent += 1 }
            }
            return sent
        }
        // What is still on its way arrives within a second.
        try await Task.sleep(for: .seconds(1))
        let elapsed = monotonicSeconds() - started
        let cpuAfter = try server.cpuSeconds()
        let clientCPU = ownCPUSeconds() - clientBefore
        let (latencies, received) = meter.stop()
        let sorted = latencies.sorted()
        func quantile(_ q: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
        return Round(
            calls: pairs.count, sent: sent, received: received, p50: quantile(0.5), p99: quantile(0.99),
            serverCPUSeconds: cpuAfter - cpuBefore, clientCPUSeconds: clientCPU, seconds: elapsed)
    }

    /// This process's CPU time (user and system), in seconds: the load client's own cost, measured
    /// apart from the server's, on the same two cores.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    // MARK: The WebSocket path alone

    /// Frames per second through the relay from one socket of a new call to the other, with
    /// at most 8 unanswered at a time, for 3 s.
    static func windowedRate(through base: URL, server: String, meter: Meter) async throws -> Double {
        let (a, b) = try await openCall(base: base, server: server, index: 10_000, meter: meter)
        defer {
            a.close()
            b.close()
        }
        return await windowed(
            send: { a.send(.binary(frame())) }, received: { meter.received }, start: { meter.start() },
            finish: { _ = meter.stop() })
    }

    static func windowedRateEcho(port: Int) async throws -> Double {
        let meter = Meter()
        let client = try await offPool {
            try WebSocketClient.connect(
                host: "127.0.0.1", port: port, path: "/",
                handlers: .init(onMessage: { message in
                    if case .binary(let bytes) = message { meter.arrived(bytes, socket: 0) }
                }))
        }
        defer { client.close() }
        return await windowed(
            send: { client.send(.binary(frame())) }, received: { meter.received }, start: { meter.start() },
            finish: { _ = meter.stop() })
    }

    static func windowed(
        send: @escaping @Sendable () -> Bool, received: @escaping @Sendable () -> Int,
        start: @escaping @Sendable () -> Void,
        finish: @escaping @Sendable () -> Void
    ) async -> Double {
        await offPool { () -> Double in
            start()
            let began = monotonicSeconds()
            var sent = 0
            while monotonicSeconds() - began < 3 {
                if sent - received() < 8 {
                    if send() { sent += 1 }
                } else {
                    usleep(50)
                }
            }
            let count = received()
            let rate = Double(count) / (monotonicSeconds() - began)
            finish()
            return rate
        }
    }
}

/// The server binary as a child process on 127.0.0.1 and a temporary database.
final class ServerChild: Sendable {
    let process: Process
    let address: String
    let directory: String
    var pid: Int32 { process.processIdentifier }

    init(binary: String) throws {
        directory = NSTemporaryDirectory() + "switchboard-relay-bench-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data-dir", directory, "--log-level", "warning"]
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N"] = "15"
        // A load client is not abuse: the limits it would meet are lifted.
        for variable in [
            "REGISTRATIONS_PER_ADDRESS", "CALLS_PER_CALLER", "CALLS_PER_CALLEE", "RINGS_PER_DEVICE",
            "MESSAGES_PER_USER",
        ] {
            environment["SWITCHBOARD_LIMIT_" + variable] = "1000000/60"
        }
        environment["SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS"] = "0"  // every phone is on this machine
        // The WebSocket path is measured flat out (8 frames in flight): the per-socket frame
        // cap (100 a second, twice real time) would drop frames, stall the window and close the
        // socket, measuring the cap instead of the path.
        environment["SWITCHBOARD_RELAY_MAX_FRAMES_PER_SECOND"] = "1000000"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        self.process = process
        // The first line is `listening` with the address.
        let text = firstLine(of: output)
        guard let range = text.range(of: #""address":"([0-9.:]+)""#, options: .regularExpression) else {
            process.terminate()
            throw RelayBench.BenchError("the server did not say where it listens: \(text)")
        }
        address = String(text[range].dropFirst(#""address":""#.count).dropLast())
    }

    /// User plus system CPU time of the server so far.
    func cpuSeconds() throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        guard let close = stat.lastIndex(of: ")") else { throw RelayBench.BenchError("unreadable /proc stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
        let utime = Double(fields[11]) ?? 0, stime = Double(fields[12]) ?? 0
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The independent echo server of the WebSocket comparison.
final class EchoAnchor: Sendable {
    let process: Process
    let port: Int
    /// Its stdin: closing it ends the server (its last step reads stdin to the end).
    private let input: Pipe

    init(script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let input = Pipe()
        process.standardInput = input
        self.input = input
        try ProcessLauncher.run(process)
        self.process = process
        guard let port = Int(firstLine(of: output).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw RelayBench.BenchError("the echo anchor did not print its port")
        }
        self.port = port
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// What a child process printed up to its first newline (or its end).
func firstLine(of pipe: Pipe) -> String {
    var line = Data()
    while !line.contains(10) {
        let chunk = pipe.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
    }
    return String(decoding: line, as: UTF8.self)
}
