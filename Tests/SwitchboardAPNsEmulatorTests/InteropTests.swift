import Foundation
import SwitchboardTesting
import Glibc
import SwitchboardAPNsEmulator
import Testing

/// Debian's curl (built with nghttp2) as an independent client: h2c with prior knowledge, and
/// TLS with ALPN h2 against the certificate the emulator writes out.
@Suite(
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs /usr/bin/curl"),
    .timeLimit(.minutes(5)))
struct CurlInteropTests {
    /// Runs curl on a thread of its own and returns its exit status and standard output.
    static func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await ProcessLauncher.output(
            of: "/usr/bin/curl", ["--silent", "--max-time", "\(Int(generousWait))"] + arguments)
    }

    static func pushArguments(_ url: String) -> [String] {
        Fixture.pushHeaders().flatMap { ["-H", "\($0.0): \($0.1)"] } + [
            "--data-binary", String(decoding: Fixture.payload(), as: UTF8.self),
            "--write-out", "\n%{http_code} %{http_version}", "--include", url,
        ]
    }

    @Test func curlPushesOverH2cWithPriorKnowledge() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(30)
            let result = try await Self.curl(
                ["--http2-prior-knowledge"] + Self.pushArguments("http://127.0.0.1:\(port)/3/device/\(token)"))
            #expect(result.status == 0)
            #expect(result.output.hasSuffix("200 2"))
            let apnsID = try #require(emulator.inbox(token: token).first?.apnsID)
            #expect(result.output.contains("apns-id: \(apnsID)"))
        }
    }

    @Test func curlPushesOverTLSWithALPNh2TrustingTheWrittenCertificate() async throws {
        var configuration = Fixture.configuration()
        configuration.tls = APNsEmulatorTLS()
        try await withEmulator(configuration) { emulator, port in
            #expect(emulator.address?.mode == "h2")
            let pem = try #require(emulator.certificatePEM)
            #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----"))
            let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-emulator-ca-\(port).pem")
                .path
            try pem.write(toFile: caFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: caFile) }

            let token = Fixture.deviceToken(31)
            for host in ["localhost", "127.0.0.1"] {
                let result = try await Self.curl(
                    ["--cacert", caFile] + Self.pushArguments("https://\(host):\(port)/3/device/\(token)"))
                #expect(result.status == 0, "\(host)")
                #expect(result.output.hasSuffix("200 2"), "\(host)")
            }
            #expect(emulator.inbox(token: token).count == 2)

            // Without the certificate curl refuses the server; without h2 the server refuses curl.
            let untrusted = try await Self.curl(Self.pushArguments("https://localhost:\(port)/3/device/\(token)"))
            #expect(untrusted.status == 60)  // CURLE_PEER_FAILED_VERIFICATION
            let http1 = try await Self.curl(
                ["--http1.1", "--cacert", caFile] + Self.pushArguments("https://localhost:\(port)/3/device/\(token)"))
            #expect(http1.status == 35)  // CURLE_SSL_CONNECT_ERROR: no application protocol
            #expect(emulator.inbox(token: token).count == 2)
        }
    }
}

/// What a client that does not speak HTTP/2 gets, and that it harms no one else.
@Suite(.timeLimit(.minutes(5))) struct ProtocolErrorTests {
    @Test func anHTTP1RequestIsClosedAndOtherClientsCarryOn() async throws {
        try await withEmulator { emulator, port in
            let reply = try await offPool { () -> [UInt8] in
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else { throw TestClientError("connect failed") }
                var timeout = timeval(tv_sec: Int(generousWait), tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let request = Array("POST /3/device/abc HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                _ = send(fd, request, request.count, Int32(MSG_NOSIGNAL))
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = recv(fd, &buffer, buffer.count, 0)
                    if count <= 0 { break }
                    received += buffer.prefix(count)
                }
                return received
            }
            // nghttp2 answers a bad preface with SETTINGS and GOAWAY (frame type 7), then the
            // emulator closes the connection (the loop above ended on EOF, not the timeout).
            #expect(reply.count >= 9)
            #expect(!String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1"))
            #expect(await eventually { emulator.stats.connectionsOpen == 0 })
            let result = try await exchange(port: port, [Fixture.push(to: Fixture.deviceToken(40))])
            #expect(result.responses[0].status == 200)
        }
    }
}
