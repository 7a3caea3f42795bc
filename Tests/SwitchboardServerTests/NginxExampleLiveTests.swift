import Foundation
import Testing
import SwitchboardTesting

/// `deploy/nginx/switchboard.conf`, as shipped (only addresses, the certificate and the port
/// put in), in front of two instances on one PostgreSQL database, with TLS: a long poll through
/// it is held and woken, an event stream's events come through unbuffered, the inside-only
/// endpoints stay inside.
@Suite(
    "The nginx example in front of two instances", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: TestPostgres.available && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx")))
struct NginxExampleLiveTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("deploy/nginx/switchboard.conf")

    /// A request through nginx (TLS, certificate checked against the test's own CA file);
    /// the status and body.
    static func https(
        _ port: Int, _ method: String, _ path: String, token: String? = nil, body: String? = nil, ca: String,
        maxTime: Int = 40
    )
        async throws -> (status: Int, body: String)
    {
        var arguments = ["-sS", "--max-time", "\(maxTime)", "--cacert", ca, "-X", method, "-w", "\n%{http_code}"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        arguments.append("https://localhost:\(port)\(path)")
        let (_, output) = try await ProcessLauncher.output(of: "/usr/bin/curl", arguments)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Two instances on one fresh PostgreSQL database behind the shipped site (TLS on `port`,
    /// and plain HTTP on `plainPort` for the WebSocket client, which speaks no TLS).
    struct Site {
        let first: ServerProcess
        let second: ServerProcess
        let port: Int
        let plainPort: Int
        let certificate: String
        let directory: ScratchDirectory
    }

    static func withSite(_ body: (Site) async throws -> Void) async throws {
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let directory = ScratchDirectory()
        defer { directory.remove() }
        chmod(directory.path, 0o755)  // nginx's workers (user nobody) use its temporary directories
        let environment = [
            "SWITCHBOARD_DATABASE": "postgres", "SWITCHBOARD_POSTGRES_URL": fresh.url,
            "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15",
            "SWITCHBOARD_TRUSTED_PROXIES": "127.0.0.1",
        ]
        let first = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", directory.path + "/a"], environment: environment)
        let second = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", directory.path + "/b"], environment: environment)
        defer {
            _ = first.stop()
            _ = second.stop()
        }

        let key = directory.path + "/key.pem", certificate = directory.path + "/cert.pem"
        let made = try await ProcessLauncher.output(
            of: "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                "-out", certificate,
                "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            ])
        #expect(made.status == 0)
        let port = try Self.freePort(), plainPort = try Self.freePort()
        var site = try String(contentsOf: Self.example, encoding: .utf8)
        let replacements = [
            "    server 127.0.0.1:8081 max_fails=3 fail_timeout=5s;\n    server 127.0.0.1:8082 max_fails=3 fail_timeout=5s;\n    server 127.0.0.1:8083 max_fails=3 fail_timeout=5s;\n":
                "    server \(first.address);\n    server \(second.address);\n",
            "    listen 443 ssl http2;\n    listen [::]:443 ssl http2;\n":
                "    listen 127.0.0.1:\(port) ssl http2;\n    listen 127.0.0.1:\(plainPort);\n",
            "server_name calls.example.com;": "server_name localhost;",
            "/etc/ssl/certs/calls.example.com.pem": certificate, "/etc/ssl/private/calls.example.com.key": key,
        ]
        for (shipped, local) in replacements {
            #expect(site.contains(shipped), "the example no longer has: \(shipped)")
            site = site.replacingOccurrences(of: shipped, with: local)
        }
        try site.write(toFile: directory.path + "/switchboard.conf", atomically: true, encoding: .utf8)
        let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map {
            "\($0)_temp_path \(directory.path)/\($0);"
        }.joined(separator: " ")
        try """
        daemon off; pid \(directory.path)/nginx.pid; error_log \(directory.path)/error.log;
        events { worker_connections 256; }
        http { access_log off; \(temporary) include \(directory.path)/switchboard.conf; }
        """.write(toFile: directory.path + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = [
            "-p", directory.path, "-e", directory.path + "/error.log", "-c", directory.path + "/nginx.conf",
        ]
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(nginx)
        defer {
            nginx.terminate()
            nginx.waitUntilExit()
        }
        #expect(
            try await eventuallyTrying {
                try await Self.https(port, "GET", "/healthz", ca: certificate, maxTime: 5).status == 200
            },
            "nginx serves: \((try? String(contentsOfFile: directory.path + "/error.log", encoding: .utf8)) ?? "")")
        try await body(
            Site(
                first: first, second: second, port: port, plainPort: plainPort, certificate: certificate,
                directory: directory))
    }

    @Test func longPollsStreamsAndTLSThroughTheExample() async throws {
        try await Self.withSite { site in try await longPollsStreamsAndTLS(site) }
    }

    private func longPollsStreamsAndTLS(_ site: Site) async throws {
        let first = site.first, second = site.second, port = site.port, certificate = site.certificate,
            directory = site.directory
        func register(_ name: String) async throws -> (token: String, id: String, cursor: Int) {
            let reply = try await Self.https(
                port, "POST", "/auth/register",
                body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#, ca: certificate)
            let object = liveJSON(reply.body)
            return (
                try #require(object["token"] as? String),
                try #require((object["user"] as? [String: Any])?["id"] as? String),
                try #require(object["eventCursor"] as? Int)
            )
        }
        let alice = try await register("alice"), bob = try await register("bob")

        // A long poll held through nginx (on either instance) is woken by a request through
        // nginx (on either instance).
        let poll = Task {
            try await Self.https(port, "GET", "/events?after=\(bob.cursor)&wait=25", token: bob.token, ca: certificate)
        }
        #expect(
            await eventually {
                let waiting = await [first.address, second.address].asyncMap {
                    Double(await liveMetric($0, "switchboard_event_waiters") ?? "0") ?? 0
                }
                return waiting.reduce(0, +) == 1
            })
        let request = try await Self.https(
            port, "POST", "/friend-requests", token: alice.token, body: #"{"userId":"\#(bob.id)"}"#, ca: certificate)
        #expect(request.status == 201)
        let woken = try await value(of: poll, within: 40)
        #expect(woken.status == 200 && woken.body.contains("friend_request"), "\(woken.body)")

        // An event stream's frames come through as they are written: the event appears in
        // what curl received while the stream is still open.
        let received = directory.path + "/stream.txt"
        let stream = Process()
        stream.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        // -N: curl writes what arrives at once (standard output, to the file), no buffering of its own.
        stream.arguments = [
            "-sSN", "--max-time", "120", "--cacert", certificate, "-H", "Authorization: Bearer \(alice.token)",
            "https://localhost:\(port)/events/stream?after=\(alice.cursor)",
        ]
        _ = FileManager.default.createFile(atPath: received, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: received))
        defer { try? output.close() }
        stream.standardOutput = output
        stream.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(stream)
        defer {
            kill(stream.processIdentifier, SIGKILL)
            stream.waitUntilExit()
        }
        func streamed() -> String { (try? String(contentsOfFile: received, encoding: .utf8)) ?? "" }
        #expect(await eventually { streamed().contains("retry: 3000") }, "the stream opened")
        let requestID = try #require(liveJSON(request.body)["id"] as? String)
        #expect(
            try await Self.https(
                port, "POST", "/friend-requests/\(requestID)/accept", token: bob.token, ca: certificate
            ).status == 200)
        #expect(
            await eventually { streamed().contains("friend_accepted") },
            "the stream's frames were held back: \(streamed())")
        #expect(stream.isRunning, "and the stream is still open")

        #expect(try await Self.https(port, "GET", "/metrics", ca: certificate).status == 403)
        #expect(try await Self.https(port, "GET", "/admin/push/status", ca: certificate).status == 403)
        // The browser client works through the site; the operator console stays inside with /admin.
        let softphone = try await Self.https(port, "GET", "/app/", ca: certificate)
        #expect(softphone.status == 200 && softphone.body.contains("/app/app.js"))
        #expect(try await Self.https(port, "GET", "/sdk/relay-audio.js", ca: certificate).status == 200)
        #expect(try await Self.https(port, "GET", "/console/", ca: certificate).status == 403)
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        for element in self { results.append(await transform(element)) }
        return results
    }
}

extension NginxExampleLiveTests {
    /// The built-in relay across instances behind the shipped site: alice's requests go to one
    /// instance and bob's to the other (so their media tokens are minted on different ones),
    /// both audio sockets pass the proxy's upgrade and meet on one instance, audio crosses both
    /// ways, and a hang-up on the instance without the sockets closes them.
    @Test func relayAudioCrossesInstancesThroughTheExample() async throws {
        try await Self.withSite { site in
            let relay = RelayLiveTests()
            let one = site.first.address, two = site.second.address
            let alice = try await liveRegister(one, "alice"), bob = try await liveRegister(two, "bob")
            let conversation = try await liveBefriend(one, alice, bob)
            let callID = try await relay.call(one, alice, "conversation", conversation)
            let bobMedia = try await relay.accept(two, callID, bob)
            let aliceMedia = try await relay.mediaToken(one, callID, alice)
            let proxy = "127.0.0.1:\(site.plainPort)"
            let aliceSocket = try await AudioPeer.connect(proxy, path: aliceMedia.path, token: aliceMedia.token)
            let bobSocket = try await AudioPeer.connect(proxy, path: bobMedia.path, token: bobMedia.token)
            func sockets(_ address: String) async -> Int {
                Int(await liveMetric(address, "switchboard_relay_sockets") ?? "0") ?? 0
            }
            #expect(await eventually { await sockets(one) + sockets(two) == 2 })
            let host = await sockets(one) == 2 ? one : two, other = host == one ? two : one
            #expect(await sockets(host) == 2, "both sockets of the call on one instance")
            for _ in 0..<10 {
                _ = aliceSocket.send(constant: 1111)
                _ = bobSocket.send(constant: 2222)
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(await eventually { bobSocket.heard.contains { $0.first == 1111 } }, "bob hears alice")
            #expect(await eventually { aliceSocket.heard.contains { $0.first == 2222 } }, "alice hears bob")
            // Bob leaves (the call ends) on the instance without the sockets; the one with them
            // learns it from the database and closes both (the call ended: 4001).
            let left = await fetch(other, "POST", "/calls/\(callID)/leave", headers: bob.auth)
            #expect(left.status == 200, "\(left.body)")
            #expect(
                await eventually { aliceSocket.closed?.code == 4001 && [4000, 4001].contains(bobSocket.closed?.code) },
                "closed: \(String(describing: aliceSocket.closed)) \(String(describing: bobSocket.closed))")
        }
    }
}
