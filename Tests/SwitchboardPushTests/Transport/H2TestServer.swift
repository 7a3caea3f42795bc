import Foundation
import SwitchboardTesting
import Testing

/// Runs `h2_test_server.py` (Python `h2`) on 127.0.0.1 for one test: HTTP/2 over TLS with a fresh self-signed
/// certificate by default (ALPN h2, the path APNs uses), or h2c with prior knowledge (`tls: false`).
///
/// The server binds a free port (or the given one, to simulate a restart), prints it, and exits on SIGTERM or when
/// the pipe on its stdin closes, so it dies with the test process even if a test crashes. ``stop()`` is bounded
/// (SIGTERM, then SIGKILL) and also runs from `deinit`.
final class H2TestServer {
    let port: Int
    /// The certificates in use (server certificate = the CA to trust; client certificate for mutual TLS).
    let certificates: TestCertificates?
    private let options: [String]
    private let process: Process
    private let input: Pipe
    private let outputPath: String
    private let errorPath: String

    static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("h2_test_server.py").path

    var baseURL: String { "\(certificates == nil ? "http" : "https")://127.0.0.1:\(port)" }
    /// The CA file a client needs to trust this server (`nil` for h2c).
    var caFile: String? { certificates?.serverCertificate }

    /// - Parameters:
    ///   - tls: serve HTTP/2 over TLS (ALPN h2); `false` serves h2c with prior knowledge.
    ///   - requireClientCertificate: demand a client certificate signed by `certificates.clientCertificate`.
    ///   - http1: serve HTTP/1.1 only (over TLS).
    convenience init(tls: Bool = true, requireClientCertificate: Bool = false, http1: Bool = false) throws {
        let certificates = tls ? try TestCertificates() : nil
        var options: [String] = []
        if let certificates {
            options += ["--cert", certificates.serverCertificate, "--key", certificates.serverKey]
            if requireClientCertificate { options += ["--client-ca", certificates.clientCertificate] }
            if http1 { options.append("--http1") }
        }
        try self.init(port: 0, certificates: certificates, options: options)
    }

    private init(port requestedPort: Int, certificates: TestCertificates?, options: [String]) throws {
        self.certificates = certificates
        self.options = options
        let directory = FileManager.default.temporaryDirectory.path
        let token = UUID().uuidString
        outputPath = "\(directory)/h2-test-server-\(token).out"
        errorPath = "\(directory)/h2-test-server-\(token).err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        defer {
            try? output.close()
            try? errors.close()
        }
        input = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.scriptPath, "--port", String(requestedPort)] + options
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try ProcessLauncher.run(process)

        let deadline = Date().addingTimeInterval(15)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first, line.hasPrefix("listening ") {
                found = Int(line.dropFirst("listening ".count))
            } else {
                usleep(10_000)
            }
        }
        guard let found else {
            let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            Self.terminate(process, input: input)
            Self.removeFiles(outputPath, errorPath)
            throw TestServerError(
                message: "h2_test_server.py did not start (it needs `python3 -m pip install h2`): \(stderr)")
        }
        port = found
    }

    deinit {
        stop()
    }

    /// Stops the server at once (open connections are dropped, like a crash); safe to call twice.
    func stop() {
        Self.terminate(process, input: input)
        Self.removeFiles(outputPath, errorPath)
    }

    /// Starts a new server on the same port with the same certificates (the caller stops the old one first).
    func restarted() throws -> H2TestServer {
        try H2TestServer(port: port, certificates: certificates, options: options)
    }

    private static func terminate(_ process: Process, input: Pipe) {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    private static func removeFiles(_ paths: String...) {
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }
}

struct TestServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The server's own counters, read through `/stats` (this multiplexes on the client's existing connection).
struct ServerStats: Decodable {
    let connections: Int
    let open: Int
    let requests: Int
    let resets: Int
}

/// A temporary directory with a self-signed server certificate (CN localhost, SAN 127.0.0.1) and a self-signed
/// client certificate, made with the `openssl` command line tool.
final class TestCertificates {
    let directory: String
    var serverCertificate: String { "\(directory)/server.crt" }
    var serverKey: String { "\(directory)/server.key" }
    var clientCertificate: String { "\(directory)/client.crt" }
    var clientKey: String { "\(directory)/client.key" }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("h2-certs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-keyout", serverKey, "-out", serverCertificate, "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-keyout", clientKey, "-out", clientCertificate, "-subj", "/CN=switchboard-push-test-client",
        ])
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestServerError(message: "openssl \(arguments.first ?? "") failed with \(process.terminationStatus)")
        }
    }
}

/// Resident set size of this process in KiB (from /proc/self/status).
func residentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
}

/// Whether the kernel still lists thread `id` in this process.
func threadExists(_ id: Int32) -> Bool {
    FileManager.default.fileExists(atPath: "/proc/self/task/\(id)")
}

/// Seconds since `start` on the continuous clock.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
