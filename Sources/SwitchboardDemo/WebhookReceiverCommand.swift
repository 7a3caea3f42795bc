import Foundation
import Glibc
import Synchronization
import SwitchboardCLI
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardLifecycle

/// `switchboard-dev webhook-receiver`: a receiver for the server's webhook deliveries that
/// checks each one's `Switchboard-Signature` and prints it, until SIGINT or SIGTERM.
public enum WebhookReceiverCommand {
    /// The `--help` text.
    public static let help = """
        Usage: switchboard-dev webhook-receiver --secret SECRET [--secret SECRET]
                                                [--listen HOST:PORT] [--fail N]

        Receives webhook deliveries (POST, any path), checks each one's Switchboard-Signature
        against the secrets (t=<unix>,v1=<hex HMAC-SHA256 of "t.body">, at most 5 minutes
        old), and prints one JSON line per delivery:
          {"verified":true,"answer":200,"deliveryId":"dlv_…","attempt":1,"signature":"t=…,v1=…",
           "event":{"id":"evt_…","type":"call.ended","createdAt":"…","data":{…}},"body":"<as received>"}
        A delivery whose signature does not verify is answered 401 and printed with
        "verified":false and "reason" (malformed, stale or mismatch). Runs until SIGINT or
        SIGTERM, then prints
          stopped received=N rejected=N
        and exits 0. The first line on standard output is
          listening on 127.0.0.1:PORT

        Options:
          --secret SECRET     a secret the endpoint signs with (the one POST /admin/webhooks
                              answered); twice while a secret is rotated
          --listen HOST:PORT  where to listen (default 127.0.0.1:0, the kernel picks the port)
          --fail N            answer the first N verified deliveries 500 (to watch the retries)
          -h, --help          show this help

        Exit status: 0 after SIGINT/SIGTERM or --help, 1 when it cannot listen, 2 for bad usage.

        Example:
          switchboard-dev webhook-receiver --secret whsec_… --listen 127.0.0.1:9000
        """

    /// Runs the command with the arguments that follow `webhook-receiver`; returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        if arguments.contains("-h") || arguments.contains("--help") {
            write(help + "\n", to: STDOUT_FILENO)
            return 0
        }
        var secrets: [String] = []
        var host = "127.0.0.1", port = 0, failures = 0
        var scanner = ArgumentScanner(arguments)
        do {
            while let flag = scanner.nextFlag() {
                switch flag {
                case "--secret": secrets.append(try scanner.value(for: flag))
                case "--listen":
                    let text = try scanner.value(for: flag)
                    guard let colon = text.lastIndex(of: ":"), let number = Int(text[text.index(after: colon)...]),
                        (0...65535).contains(number), colon != text.startIndex
                    else { throw UsageError(message: "--listen needs HOST:PORT, not '\(text)'") }
                    host = String(text[..<colon])
                    port = number
                case "--fail":
                    let text = try scanner.value(for: flag)
                    guard let number = Int(text), number >= 0 else {
                        throw UsageError(message: "--fail needs a whole number, not '\(text)'")
                    }
                    failures = number
                default: throw scanner.unknown(flag)
                }
            }
            guard !secrets.isEmpty else { throw UsageError(message: "--secret SECRET is required") }
        } catch {
            write(
                "switchboard-dev webhook-receiver: \((error as? UsageError)?.message ?? "\(error)")\n"
                    + "Run 'switchboard-dev webhook-receiver --help' for usage.\n", to: STDERR_FILENO)
            return 2
        }
        let stop: StopSignalWait
        do {
            stop = try StopSignalWait([SIGTERM, SIGINT])
        } catch {
            write("switchboard-dev webhook-receiver: cannot start: \(error)\n", to: STDERR_FILENO)
            return 1
        }
        let receiver = Receiver(secrets: secrets, failFirst: failures)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port, loopCount: 1),
            handler: { await receiver.handle($0) })
        let address: String
        do {
            let bound = try server.start()
            address = "\(bound.host):\(bound.port)"
        } catch {
            write("switchboard-dev webhook-receiver: cannot listen: \(error)\n", to: STDERR_FILENO)
            return 1
        }
        write("listening on \(address)\n", to: STDOUT_FILENO)
        _ = stop.wait()
        server.stopNow()
        let counts = receiver.counts
        write("stopped received=\(counts.received) rejected=\(counts.rejected)\n", to: STDOUT_FILENO)
        return 0
    }

    /// Checks, counts and prints deliveries.
    final class Receiver: Sendable {
        let secrets: [String]
        let failFirst: Int
        private let state = Mutex((received: 0, rejected: 0, failed: 0))

        init(secrets: [String], failFirst: Int) {
            self.secrets = secrets
            self.failFirst = failFirst
        }

        var counts: (received: Int, rejected: Int) { state.withLock { ($0.received, $0.rejected) } }

        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            guard request.method == "POST" else { return HTTPResponse(status: 405) }
            let signature = request.headers[WebhookSignature.headerName] ?? ""
            let now = Int64(Date().timeIntervalSince1970)
            let verdict = WebhookSignature.verify(header: signature, body: request.body, secrets: secrets, now: now)
            var line: [String: Any] = [
                "verified": verdict == .valid, "signature": signature,
                "deliveryId": request.headers["Switchboard-Delivery-Id"] ?? "",
                "attempt": Int(request.headers["Switchboard-Delivery-Attempt"] ?? "") ?? 0,
            ]
            line["event"] = (try? JSONSerialization.jsonObject(with: Data(request.body))) ?? NSNull()
            line["body"] = String(decoding: request.body, as: UTF8.self)
            let status: Int
            if verdict == .valid {
                let failing = state.withLock { state -> Bool in
                    state.received += 1
                    guard state.failed < failFirst else { return false }
                    state.failed += 1
                    return true
                }
                status = failing ? 500 : 200
            } else {
                state.withLock { $0.rejected += 1 }
                line["reason"] = "\(verdict)"
                status = 401
            }
            line["answer"] = status
            if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
                write(String(decoding: data, as: UTF8.self) + "\n", to: STDOUT_FILENO)
            }
            return HTTPResponse(status: status)
        }
    }

    /// One `write(2)` per line: unbuffered, so whoever reads the pipe sees each at once.
    static func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
