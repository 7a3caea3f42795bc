import Foundation
import Glibc
import Synchronization
import SwitchboardTesting
import Testing

/// The package's two executables, built next to the test bundle (`swift build --build-tests`
/// builds every product).
enum Executable: String, Sendable {
    /// The production server: serve, version, help.
    case server = "switchboard"
    /// The developer tools: demo, bench wakeup, proxy, apns-emulator.
    case developerTools = "switchboard-dev"

    var path: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(rawValue).path
    }
}

/// Runs one of the real binaries built next to the test bundle: `switchboard serve` unless told
/// otherwise.
final class ServerProcess: Sendable {
    let process: Process
    let address: String
    private let output: FileHandle
    private let outputPath: String

    /// Starts `<executable> <command>` (default `switchboard serve`) and waits (bounded,
    /// generously) for its `listening` line (the first stdout line: the server's JSON log line,
    /// or, with `listeningLine`, a plain line with that prefix before the address). This blocks the calling
    /// thread; async tests use ``launch(command:arguments:environment:)``, which waits on a
    /// thread of its own.
    ///
    /// With `blockedStopSignals`, the binary starts with SIGTERM and SIGINT blocked, as it does
    /// when a parent's blocked mask is inherited (Python's exec stands in for such a parent).
    init(
        _ executable: Executable = .server, command: String = "serve", arguments: [String],
        environment: [String: String] = [:],
        blockedStopSignals: Bool = false, listeningLine: String? = nil
    ) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-out-\(UUID().uuidString)")
            .path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        outputPath = path
        output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        process = Process()
        if blockedStopSignals {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments =
                [
                    "-c",
                    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT}); os.execv(sys.argv[1], sys.argv[1:])",
                    executable.path, command,
                ] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable.path)
            process.arguments = [command] + arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        let deadline = Date().addingTimeInterval(generousWait)
        var found: String?
        while Date() < deadline, found == nil, process.isRunning {
            if let prefix = listeningLine,
                let firstLine = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").first,
                firstLine.hasPrefix(prefix)
            {
                found = String(firstLine.dropFirst(prefix.count))
            } else if let firstLine = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n")
                .first,
                let object = try? JSONSerialization.jsonObject(with: Data(firstLine.utf8)) as? [String: Any],
                object["msg"] as? String == "listening"
            {
                found = object["address"] as? String
            } else {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        guard let found else {
            process.terminate()
            throw CocoaError(
                .fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "server printed no listening line"])
        }
        address = found
    }

    /// Starts the process like `init`, waiting for it on a thread of its own so the cooperative
    /// pool (two threads here) stays free for the tests running beside this one.
    static func launch(
        _ executable: Executable = .server, command: String = "serve", arguments: [String],
        environment: [String: String] = [:],
        blockedStopSignals: Bool = false, listeningLine: String? = nil
    ) async throws -> ServerProcess {
        try await offPool {
            Result {
                try ServerProcess(
                    executable, command: command, arguments: arguments, environment: environment,
                    blockedStopSignals: blockedStopSignals, listeningLine: listeningLine)
            }
        }.get()
    }

    /// A test that ends early (a failed `#require` before its own stop) leaves nothing running,
    /// and no test leaves its output file behind.
    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? output.close()
        try? FileManager.default.removeItem(atPath: outputPath)
    }

    var lines: [String] {
        ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Kills the process with SIGKILL (a crash) and waits for it to be gone.
    func crash() {
        kill(process.processIdentifier, SIGKILL)
        let deadline = Date().addingTimeInterval(generousWait)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    /// Sends SIGTERM and waits (bounded by `seconds`) for the exit status; `nil` when the process
    /// had to be killed. Blocks the calling thread (it suits `defer`); async tests that assert
    /// on the status use ``terminate(within:)``.
    func stop(within seconds: Double = generousWait) -> Int32? {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        try? output.close()
        try? FileManager.default.removeItem(atPath: outputPath)
        return process.terminationStatus
    }

    /// `stop(within:)` on a thread of its own.
    func terminate(within seconds: Double = generousWait) async -> Int32? {
        await offPool { self.stop(within: seconds) }
    }
}

/// A tiny HTTP client over URLSession-free sockets: one request, one response, connection closed.
/// The blocking socket work runs on a thread of its own (a held long poll must not occupy one of
/// the cooperative pool's two threads), and each read waits at most `generousWait`.
func fetch(
    _ address: String, _ method: String, _ path: String, body: String? = nil, headers extra: [String: String] = [:]
) async -> (status: Int, headers: String, body: String) {
    await offPool {
        let parts = address.split(separator: ":")
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = UInt16(Int(parts[1])!).bigEndian
        inet_pton(AF_INET, String(parts[0]), &sin.sin_addr)
        var timeout = timeval(tv_sec: Int(generousWait), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return (0, "", "") }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
        for (name, value) in extra { request += "\(name): \(value)\r\n" }
        if let body { request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + (body ?? "")
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return (0, text, "") }
        let head = String(text[..<split.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, String(text[split.upperBound...]))
    }
}

/// The value of an unlabelled metric in the server's `/metrics` page, if present.
func liveMetric(_ address: String, _ name: String) async -> String? {
    await fetch(address, "GET", "/metrics").body.split(separator: "\n")
        .first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
}

@Suite("switchboard binary over loopback", .serialized, .timeLimit(.minutes(5)))
struct ServeBinaryLiveTests {
    @Test func servesHealthMetricsOpenAPIAndErrorsThenStopsCleanly() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(arguments: [
            "--listen", "127.0.0.1:0", "--data-dir", data.path + "/nested/dir",
        ])

        let health = await fetch(server.address, "GET", "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"database":"ok","status":"ok"}"#)
        #expect(health.headers.contains("X-Request-Id: "))

        let missing = await fetch(server.address, "GET", "/nowhere")
        #expect(missing.status == 404)
        #expect(missing.body.hasPrefix(#"{"error":{"code":"NOT_FOUND""#))

        let malformed = await fetch(server.address, "GET", "/has space")
        #expect(malformed.status == 400)
        #expect(malformed.body.contains("BAD_REQUEST"))

        let openapi = await fetch(server.address, "GET", "/openapi.json")
        #expect(openapi.status == 200)
        #expect((try? JSONSerialization.jsonObject(with: Data(openapi.body.utf8))) != nil)

        let metrics = await fetch(server.address, "GET", "/metrics")
        #expect(
            metrics.body.contains(#"switchboard_http_requests_total{route="/healthz",method="GET",status="200"} 1"#))
        #expect(metrics.body.contains("switchboard_http_open_connections 1"))

        #expect(FileManager.default.fileExists(atPath: data.path + "/nested/dir/switchboard.sqlite3"))
        let lines = server.lines
        #expect(await server.terminate() == 0)
        #expect(lines.first?.contains(#""msg":"listening""#) == true)
        #expect(
            lines.contains {
                $0.contains(#""msg":"request""#) && $0.contains(#""path":"/healthz""#)
                    && $0.contains(#""request.id":""#)
            })
    }

    @Test func listeningLineComesFirstEvenAtWarningLevel() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--data-dir", data.path],
            environment: ["SWITCHBOARD_LISTEN": "127.0.0.1:0", "SWITCHBOARD_LOG_LEVEL": "warning"])
        #expect(await fetch(server.address, "GET", "/healthz").status == 200)
        let lines = server.lines
        #expect(await server.terminate() == 0)
        #expect(lines.first?.contains(#""msg":"listening""#) == true)
        // Nothing below warning is written after it (no request lines); the warnings are that
        // APNs is not configured, said at start-up (the Android channels being off is info).
        #expect(lines.count == 2, "\(lines)")
        #expect(
            lines.dropFirst().allSatisfy {
                $0.contains(#""level":"warning""#) && $0.contains("push channel not configured")
            })
    }

    /// A parent's blocked mask is inherited through fork and exec (test runners, libdispatch
    /// threads, some supervisors): SIGTERM must still stop the server and the emulator, not stay
    /// pending for ever.
    @Test func sigtermStopsServeAndTheEmulatorEvenWhenTheyStartWithItBlocked() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], blockedStopSignals: true)
        #expect(await fetch(server.address, "GET", "/healthz").status == 200)
        #expect(await server.terminate() == 0)
        let emulator = try await ServerProcess.launch(
            .developerTools, command: "apns-emulator", arguments: ["--listen", "127.0.0.1:0"], blockedStopSignals: true)
        #expect(await emulator.terminate() == 0)
    }

    @Test func sigtermLetsTheDatabaseReopen() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let first = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        #expect(await first.terminate() == 0)
        // A second start over the same directory finds its schema and serves.
        let second = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        #expect(await fetch(second.address, "GET", "/healthz").status == 200)
        #expect(await second.terminate() == 0)
    }
}

@Suite("switchboard command line", .timeLimit(.minutes(5)))
struct CommandLineTests {
    /// Runs a binary (the server unless told otherwise) to completion on a thread of its own.
    private func run(
        _ arguments: [String], in executable: Executable = .server, environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await offPool { Result { try Self.runBlocking(executable, arguments, environment: environment) } }.get()
    }

    private static func runBlocking(
        _ executable: Executable, _ arguments: [String], environment: [String: String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.path)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try ProcessLauncher.run(process)
        // Bounded: a command that should exit at once but serves instead is killed, not awaited.
        let deadline = Date().addingTimeInterval(generousWait)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }

    @Test func helpForEveryCommand() async throws {
        let top = try await run(["--help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("serve"))
        let serve = try await run(["serve", "--help"])
        #expect(serve.status == 0)
        for word in ["--listen", "--data-dir", "--config", "--log-level", "SWITCHBOARD_LISTEN", "maxBodyBytes"] {
            #expect(serve.stdout.contains(word), "serve --help lacks \(word)")
        }
        #expect(try await run(["help", "serve"]).stdout == serve.stdout)
        #expect(try await run(["version", "--help"]).status == 0)
        #expect(try await run(["version"]).stdout.hasPrefix("switchboard "))
    }

    /// The server has no developer tools: its help and an attempt to run one point to switchboard-dev.
    @Test func theServerSendsDeveloperToolsToSwitchboardDev() async throws {
        let top = try await run(["--help"])
        #expect(top.stdout.contains("switchboard-dev --help"))
        for tool in ["demo", "bench", "proxy", "apns-emulator", "push-emulator"] {
            #expect(!top.stdout.contains("\n  \(tool) "), "switchboard --help lists \(tool) as its own command")
            for arguments in [[tool], ["help", tool]] {
                let asked = try await run(arguments)
                #expect(asked.status == 2, "switchboard \(arguments.joined(separator: " "))")
                #expect(asked.stderr.contains("Run 'switchboard-dev \(tool)'."), "\(asked.stderr)")
            }
        }
    }

    @Test func developerToolsHelpForEveryCommand() async throws {
        let top = try await run(["--help"], in: .developerTools)
        #expect(top.status == 0)
        for command in ["demo", "bench wakeup", "proxy", "push-emulator", "version", "help"] {
            #expect(top.stdout.contains("\n  \(command) "), "switchboard-dev --help lacks \(command)")
        }
        for tool in ["demo", "bench", "proxy", "push-emulator", "apns-emulator"] {
            let help = try await run(["help", tool], in: .developerTools)
            #expect(help.status == 0)
            // apns-emulator is the push emulator's first name: the same help.
            #expect(
                help.stdout.hasPrefix("Usage: switchboard-dev \(tool == "apns-emulator" ? "push-emulator" : tool) "),
                "\(help.stdout.prefix(80))")
            #expect(try await run([tool, "--help"], in: .developerTools).stdout == help.stdout)
        }
        #expect(try await run(["version"], in: .developerTools).stdout.hasPrefix("switchboard-dev "))
        let serve = try await run(["serve"], in: .developerTools)
        #expect(serve.status == 2)
        #expect(serve.stderr.contains("'switchboard serve'"))
        let unknown = try await run(["frobnicate"], in: .developerTools)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown command 'frobnicate'"))
    }

    @Test func usageErrorsExit2WithAHint() async throws {
        let unknown = try await run(["frobnicate"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown command 'frobnicate'"))
        let badFlag = try await run(["serve", "--port", "1"])
        #expect(badFlag.status == 2)
        #expect(badFlag.stderr.contains("unknown option '--port'"))
        let badValue = try await run(["serve", "--listen", "nowhere"])
        #expect(badValue.status == 2)
        #expect(badValue.stderr.contains("--listen must be HOST:PORT"))
        let missingFile = try await run(["serve", "--config", "/nonexistent/switchboard.json"])
        #expect(missingFile.status == 2)
        #expect(missingFile.stderr.contains("cannot read configuration file"))
    }

    /// `database` postgres: without a URL the start fails saying so; with one, the binary
    /// migrates an empty database, serves, and logs where the data is without the password.
    @Test func servesFromPostgreSQLAndNeverLogsItsPassword() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let missing = try await run(
            ["serve", "--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_DATABASE": "postgres"])
        #expect(missing.status == 1 && missing.stderr.contains("postgresURL"))
        guard TestPostgres.available else { return }
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        // The test cluster trusts local connections, so the password is never checked: only
        // where it shows up is.
        let url = fresh.url + "&password=hunter2-secret"
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_DATABASE": "postgres", "SWITCHBOARD_POSTGRES_URL": url])
        let register = await fetch(
            server.address, "POST", "/auth/register",
            body: #"{"username":"pat","password":"long enough","displayName":"Pat"}"#)
        #expect(register.status == 201)
        #expect(await fetch(server.address, "GET", "/healthz").body == #"{"database":"ok","status":"ok"}"#)
        let lines = server.lines
        #expect(await server.terminate() == 0)
        #expect(
            lines.contains {
                $0.contains(#""msg":"database ready""#) && $0.contains(#""database":"postgres""#)
                    && $0.contains("password=***")
            })
        #expect(!lines.contains { $0.contains("hunter2") })
        #expect(
            !FileManager.default.fileExists(atPath: data.path + "/switchboard.sqlite3"),
            "no SQLite file beside PostgreSQL")
    }

    /// The one-shot move: a server's SQLite data copied by the binary into an empty
    /// PostgreSQL database, which a server on PostgreSQL then signs the same account into.
    @Test func copyToPostgresMovesTheDataOnce() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        #expect(try await run(["copy-to-postgres", "--data-dir", data.path]).status == 2, "no URL")
        guard TestPostgres.available else { return }
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let missing = try await run([
            "copy-to-postgres", "--data-dir", data.path + "/none", "--postgres-url", fresh.url,
        ])
        #expect(missing.status == 1 && missing.stderr.contains("nothing was copied"))
        let sqlite = try await ServerProcess.launch(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path])
        let account = try await liveRegister(sqlite.address, "mover")
        #expect(await sqlite.terminate() == 0)
        let copied = try await run([
            "copy-to-postgres", "--data-dir", data.path, "--postgres-url", fresh.url + "&password=hunter2-secret",
        ])
        #expect(copied.status == 0 && copied.stdout.contains("users: 1 row(s)"), "\(copied.stderr)")
        #expect(!copied.stdout.contains("hunter2"))
        #expect(
            try await run(["copy-to-postgres", "--data-dir", data.path, "--postgres-url", fresh.url]).status == 1,
            "not into a non-empty database")
        let postgres = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path + "/unused"],
            environment: ["SWITCHBOARD_DATABASE": "postgres", "SWITCHBOARD_POSTGRES_URL": fresh.url])
        let me = await fetch(postgres.address, "GET", "/me", headers: account.auth)
        #expect(me.status == 200 && me.body.contains(account.id), "the same token signs in on PostgreSQL")
        #expect(await postgres.terminate() == 0)
    }

    @Test func portInUseFailsWithStatus1() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let holder = try await ServerProcess.launch(arguments: [
            "--listen", "127.0.0.1:0", "--data-dir", data.path + "/a",
        ])
        let second = try await run(["serve", "--listen", holder.address, "--data-dir", data.path + "/b"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("cannot listen"))
        #expect(await holder.terminate() == 0)
    }
}
