import Foundation
import SwitchboardTesting
import Glibc
import Testing

/// The real binary with few file descriptors, flooded with more connections than fit: it keeps
/// serving the connections it has (under load: the Swift runtime must still find a descriptor
/// when it needs one), stops accepting for a while instead of spinning on a listening socket
/// that stays readable, says so in the log (a few lines) and in `/metrics`, and accepts again
/// once descriptors are free.
@Suite("switchboard out of file descriptors", .serialized, .timeLimit(.minutes(3)))
struct DescriptorExhaustionLiveTests {
    static let descriptorLimit = 64
    /// What the HTTP core leaves free at this limit (a quarter of it, at most 64).
    static let reserve = 16

    @Test func aFloodBeyondTheDescriptorLimitPausesAcceptingAndRecovers() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try LimitedServerProcess(descriptorLimit: Self.descriptorLimit, dataDirectory: data.path)
        defer { server.kill() }
        #expect(
            server.limits.contains {
                $0.hasPrefix("Max open files") && $0.split(separator: " ").suffix(3).prefix(2) == ["64", "64"]
            },
            "the server runs with the limit: \(server.limits)")

        // Clients that connected before the flood keep their connections.
        let clients = try (0..<4).map { _ in try KeepAliveConnection(address: server.address) }
        defer { clients.forEach { $0.close() } }
        for client in clients { #expect(try client.get("/healthz").status == 200) }

        // Far more clients than descriptors; they wait in the kernel's backlog.
        var flood: [Int32] = []
        defer { flood.forEach { Glibc.close($0) } }
        for _ in 0..<300 {
            guard let fd = connectSocket(server.address) else { break }
            flood.append(fd)
        }
        #expect(flood.count == 300, "the backlog takes them all")
        let exhausted = await eventually(seconds: 30) { server.openDescriptors >= Self.descriptorLimit - Self.reserve }
        try #require(exhausted, "the server fills its descriptors: \(server.openDescriptors) open")

        // No busy loop while it cannot accept: a spin costs a core per loop thread. On a machine
        // busy with other work a spinning thread gets less CPU, but it is running or waiting for
        // a CPU all the time, where a loop that sleeps wakes a few times a second; the kernel
        // tells both apart where it keeps scheduler statistics.
        let usage = try server.usage(over: 3)
        #expect(usage.cpu < 0.3, "the server used \(Int(usage.cpu * 100)) % of a core while it could not accept")
        if let busiest = usage.busiestThread {
            #expect(busiest < 0.8, "a server thread was running or runnable \(Int(busiest * 100)) % of the time")
        }
        #expect(
            server.lines.contains { $0.contains(#""msg":"cannot accept connections""#) },
            "logged: \(server.lines.suffix(3))")

        // The connections it already had are served, also under load.
        let answered = await withTaskGroup(of: Int.self) { group in
            for client in clients {
                group.addTask {
                    let until = ContinuousClock.now + .seconds(4)
                    var ok = 0
                    while ContinuousClock.now < until {
                        guard let statuses = try? client.get("/healthz", times: 20) else { return ok }
                        ok += statuses.filter { $0 == 200 }.count
                    }
                    return ok
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(answered.allSatisfy { $0 > 0 }, "answered per connection: \(answered)")
        #expect(server.process.isRunning, "the server is still running: \(server.lines.suffix(3))")
        let metrics = try clients[0].get("/metrics")
        let refused =
            metrics.body.split(separator: "\n")
            .first { $0.hasPrefix(#"switchboard_http_accept_errors_total{reason="descriptor_reserve"} "#) }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(
            refused > 0, "counted in /metrics: \(metrics.body.split(separator: "\n").filter { $0.contains("accept") })")

        // Once the flood leaves, new clients get in again.
        flood.forEach { Glibc.close($0) }
        flood = []
        let recovered = await eventually(seconds: 60) { await fetch(server.address, "GET", "/healthz").status == 200 }
        #expect(recovered, "a new connection is accepted after the flood")

        let lines = server.lines.filter { $0.contains(#""msg":"cannot accept connections""#) }
        #expect(!lines.isEmpty && lines.count <= 20, "rate-limited: \(lines.count) lines")
        #expect(lines.first?.contains(#""reason":"descriptor_reserve""#) == true, "\(lines.first ?? "")")
        #expect(server.stop() == 0)
    }
}

/// `switchboard serve` under `ulimit -n <limit>` (soft and hard, so the server cannot raise it),
/// started through `/bin/sh`, which `exec`s it: the process id is the server's.
private final class LimitedServerProcess: Sendable {
    let process: Process
    let address: String
    private let outputPath: String

    init(descriptorLimit: Int, dataDirectory: String) throws {
        outputPath = dataDirectory + "/stdout.log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", #"ulimit -n "$1" && shift && exec "$@""#, "sh", String(descriptorLimit),
            Executable.server.path, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging([
            // The flood's connections send nothing: keep them open for the whole test.
            "SWITCHBOARD_HEADER_TIMEOUT_SECONDS": "120",
            "SWITCHBOARD_LOOP_THREADS": "2",
        ]) { $1 }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        try? output.close()
        let deadline = Date().addingTimeInterval(20)
        var found: String?
        while Date() < deadline, found == nil, process.isRunning {
            if let first = (try? String(contentsOfFile: outputPath, encoding: .utf8))?.split(separator: "\n").first,
                let object = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
                object["msg"] as? String == "listening"
            {
                found = object["address"] as? String
            } else {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        guard let found else {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            throw TestFailure("the server printed no listening line")
        }
        address = found
    }

    var lines: [String] {
        ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// `/proc/<pid>/limits`, a line per resource.
    var limits: [String] {
        ((try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? "")
            .split(separator: "\n").map {
                $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            }
    }

    /// Descriptors the server has open now.
    var openDescriptors: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd")) ?? []).count
    }

    /// User plus system CPU time of the server, in seconds.
    func cpuSeconds() throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
        // Fields after the command name (which is in parentheses): state is the first, utime
        // and stime the 12th and 13th.
        guard let close = stat.lastIndex(of: ")") else { throw TestFailure("unreadable stat: \(stat)") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw TestFailure("unreadable stat: \(stat)")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Per thread, nanoseconds spent running plus waiting to run
    /// (`/proc/<pid>/task/<tid>/schedstat`), or nil where the kernel does not keep them.
    func runnableNanoseconds() -> [String: Double]? {
        let tasks = "/proc/\(process.processIdentifier)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return nil }
        var times: [String: Double] = [:]
        for thread in threads {
            guard let text = try? String(contentsOfFile: "\(tasks)/\(thread)/schedstat", encoding: .utf8) else {
                continue
            }
            let fields = text.split(separator: " ").compactMap {
                Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard fields.count >= 2 else { return nil }
            times[thread] = fields[0] + fields[1]
        }
        return times
    }

    /// Over the next `seconds` of wall time: the share of one core the server used, and the
    /// largest share of that time any one of its threads was running or waiting for a CPU.
    func usage(over seconds: Double) throws -> (cpu: Double, busiestThread: Double?) {
        let start = ContinuousClock.now
        let cpuBefore = try cpuSeconds()
        let runnableBefore = runnableNanoseconds()
        Thread.sleep(forTimeInterval: seconds)
        let cpu = try cpuSeconds() - cpuBefore
        let runnableAfter = runnableNanoseconds()
        let elapsed = ContinuousClock.now - start
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard let runnableBefore, let runnableAfter else { return (cpu / wall, nil) }
        let busiest =
            runnableAfter.map { thread, after in (after - (runnableBefore[thread] ?? after)) / 1e9 }.max() ?? 0
        return (cpu / wall, busiest / wall)
    }

    /// SIGTERM, then the exit status (nil when it had to be killed).
    func stop() -> Int32? {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill()
            return nil
        }
        return process.terminationStatus
    }

    /// SIGKILL unless it already exited, and wait for it: nothing is left behind.
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A blocking TCP connection to `host:port`, or nil; connect and reads time out.
private func connectSocket(_ address: String, timeoutSeconds: Int = 5) -> Int32? {
    let parts = address.split(separator: ":")
    guard parts.count == 2, let port = UInt16(parts[1]) else { return nil }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var sin = sockaddr_in()
    sin.sin_family = sa_family_t(AF_INET)
    sin.sin_port = port.bigEndian
    inet_pton(AF_INET, String(parts[0]), &sin.sin_addr)
    let connected = withUnsafePointer(to: &sin) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        Glibc.close(fd)
        return nil
    }
    return fd
}

/// One keep-alive HTTP/1.1 connection: a request at a time, responses with a Content-Length.
// @unchecked Sendable: `buffered` (the only `var`) and the socket are used by one task at a time.
// The test makes the connections, then hands each to exactly one child of a task group. Adding
// the child orders it after the test's earlier use, and the test touches a connection again only
// after awaiting the whole group. No two tasks ever use a connection concurrently.
private final class KeepAliveConnection: @unchecked Sendable {
    private let fd: Int32
    private var buffered: [UInt8] = []

    init(address: String) throws {
        guard let fd = connectSocket(address, timeoutSeconds: 10) else {
            throw TestFailure("cannot connect to \(address)")
        }
        self.fd = fd
    }

    func close() { Glibc.close(fd) }

    func get(_ path: String) throws -> (status: Int, body: String) {
        try send(path, times: 1)
        return try response()
    }

    /// `times` requests sent at once (pipelined), then their statuses.
    func get(_ path: String, times: Int) throws -> [Int] {
        try send(path, times: times)
        return try (0..<times).map { _ in try response().status }
    }

    private func send(_ path: String, times: Int) throws {
        let request = Array(String(repeating: "GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n", count: times).utf8)
        var offset = 0
        while offset < request.count {
            let sent = request.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw TestFailure("send failed: errno \(errno)") }
            offset += sent
        }
    }

    private func response() throws -> (status: Int, body: String) {
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffered.indices.dropLast(3).first { Array(buffered[$0..<$0 + 4]) == separator }
            if headEnd == nil { try receive() }
        }
        let head = String(decoding: buffered[..<headEnd!], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        let length =
            head.split(separator: "\r\n")
            .first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) } ?? 0
        let bodyStart = headEnd! + 4
        while buffered.count < bodyStart + length { try receive() }
        let body = String(decoding: buffered[bodyStart..<bodyStart + length], as: UTF8.self)
        buffered.removeFirst(bodyStart + length)
        return (status, body)
    }

    private func receive() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = read(fd, &chunk, chunk.count)
        guard count > 0 else { throw TestFailure("the connection closed or timed out (read \(count), errno \(errno))") }
        buffered.append(contentsOf: chunk[0..<count])
    }
}
