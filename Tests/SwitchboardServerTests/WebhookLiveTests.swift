import Foundation
import Glibc
import Synchronization
import SwitchboardTesting
import Testing

/// Webhooks through the binaries: `switchboard serve` delivers to `switchboard-dev
/// webhook-receiver`, which checks every signature; Python's `hmac` checks them again.
@Suite("Webhooks through the binaries", .serialized, .timeLimit(.minutes(6)))
struct WebhookLiveTests {
    static let adminKey = "webhook-test-admin-key"
    static var admin: [String: String] { ["Authorization": "Bearer \(adminKey)"] }
    static let settings = [
        "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15", "SWITCHBOARD_ADMIN_KEY": adminKey,
        "SWITCHBOARD_WEBHOOK_RETRY_MAX_SECONDS": "1", "SWITCHBOARD_MEDIA_BACKEND": "none",
    ]

    /// A running `switchboard-dev webhook-receiver`; its stdout lines are the deliveries it saw.
    final class Receiver: Sendable {
        let process: ServerProcess
        var url: String { "http://\(process.address)/hooks" }

        init(secret: String, port: Int = 0, fail: Int = 0) async throws {
            process = try await ServerProcess.launch(
                .developerTools, command: "webhook-receiver",
                arguments: ["--secret", secret, "--listen", "127.0.0.1:\(port)", "--fail", "\(fail)"],
                listeningLine: "listening on ")
        }

        /// The deliveries printed so far.
        var deliveries: [[String: Any]] {
            process.lines.dropFirst().compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        /// The verified deliveries it accepted (answered 200).
        var accepted: [[String: Any]] {
            deliveries.filter { $0["verified"] as? Bool == true && $0["answer"] as? Int == 200 }
        }

        func types(ofCall callID: String) -> [String] {
            accepted.compactMap { delivery in
                let event = delivery["event"] as? [String: Any]
                let call = (event?["data"] as? [String: Any])?["call"] as? [String: Any]
                return call?["id"] as? String == callID ? event?["type"] as? String : nil
            }
        }
    }

    static func endpoint(_ server: String, url: String, secret: String, events: [String] = []) async throws -> String {
        let events = events.map { "\"\($0)\"" }.joined(separator: ",")
        let created = await fetch(
            server, "POST", "/admin/webhooks",
            body: #"{"url":"\#(url)","secret":"\#(secret)","events":[\#(events)]}"#, headers: admin)
        #expect(created.status == 201, "\(created.body)")
        return try #require(liveJSON(created.body)["id"] as? String)
    }

    static func call(_ server: String, _ caller: LiveAccount, _ conversation: String) async throws -> String {
        let created = await fetch(
            server, "POST", "/calls",
            body:
                #"{"scopeKind":"conversation","scopeId":"\#(conversation)","mode":"audio","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(created.status == 201, "\(created.body)")
        return try #require(liveJSON(created.body)["id"] as? String)
    }

    static func messages(_ server: String, _ person: LiveAccount, _ conversation: String) async -> [[String: Any]] {
        liveJSON(await fetch(server, "GET", "/conversations/\(conversation)/messages", headers: person.auth).body)[
            "messages"] as? [[String: Any]] ?? []
    }

    /// Checks `signature` over `body` with Python's own hmac; returns whether it verified.
    static func pythonVerifies(body: String, signature: String, secret: String) async throws -> Bool {
        let script = """
            import hmac, hashlib, sys, time
            body, header, secret = sys.argv[1].encode(), sys.argv[2], sys.argv[3].encode()
            parts = [p.split("=", 1) for p in header.split(",")]
            t = [v for k, v in parts if k == "t"][0]
            v1 = [v for k, v in parts if k == "v1"]
            expected = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
            ok = any(hmac.compare_digest(expected, v) for v in v1) and abs(time.time() - int(t)) <= 300
            sys.exit(0 if ok else 1)
            """
        return try await offPool {
            Result { () throws -> Bool in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = ["-c", script, body, signature, secret]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try ProcessLauncher.run(process)
                let deadline = Date().addingTimeInterval(generousWait)
                while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    return false
                }
                return process.terminationReason == .exit && process.terminationStatus == 0
            }
        }.get()
    }

    @Test func aCallsLifeReachesTheReceiverInOrderSignedOnceAndIsRecordedInItsConversation() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let secret = "whsec_live-test-secret-0123456789"
        // The first delivery is answered 500: it comes again, once.
        let receiver = try await Receiver(secret: secret, fail: 1)
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: Self.settings)
        defer { _ = server.stop() }
        let address = server.address
        let endpoint = try await Self.endpoint(address, url: receiver.url, secret: secret)
        let alice = try await liveRegister(address, "alice"), bob = try await liveRegister(address, "bob")
        let conversation = try await liveBefriend(address, alice, bob)

        let callID = try await Self.call(address, alice, conversation)
        #expect(await fetch(address, "POST", "/calls/\(callID)/accept", headers: bob.auth).status == 200)
        #expect(await fetch(address, "POST", "/calls/\(callID)/leave", headers: alice.auth).status == 200)
        #expect(await eventually { receiver.types(ofCall: callID).count >= 3 })
        #expect(receiver.types(ofCall: callID) == ["call.ringing", "call.answered", "call.ended"])
        // The refused first delivery came again with the same event id; nothing came twice after.
        let all = receiver.deliveries
        #expect(all.count == 4, "\(all.count) deliveries")
        #expect(all.first?["answer"] as? Int == 500 && all.dropFirst().allSatisfy { $0["answer"] as? Int == 200 })
        let ids = all.compactMap { ($0["event"] as? [String: Any])?["id"] as? String }
        #expect(ids.count == 4 && ids[0] == ids[1] && Set(ids).count == 3)
        #expect(all[1]["attempt"] as? Int == 2)
        // call.ended carries the outcome, the duration and the participants' times.
        let ended = try #require(receiver.accepted.last?["event"] as? [String: Any])
        let endedData = try #require(ended["data"] as? [String: Any])
        #expect(endedData["outcome"] as? String == "answered" && endedData["durationSeconds"] as? Int != nil)
        let participants = (endedData["call"] as? [String: Any])?["participants"] as? [[String: Any]] ?? []
        #expect(participants.count == 2 && participants.allSatisfy { $0["joinedAt"] != nil && $0["leftAt"] != nil })

        // Every signature verifies with Python's hmac too; a changed body does not.
        for delivery in receiver.accepted {
            let body = try #require(delivery["body"] as? String),
                signature = try #require(delivery["signature"] as? String)
            #expect(try await Self.pythonVerifies(body: body, signature: signature, secret: secret))
            #expect(!(try await Self.pythonVerifies(body: body + " ", signature: signature, secret: secret)))
        }

        // The conversation shows the call once, as a typed record.
        let records = await Self.messages(address, bob, conversation).filter { $0["kind"] as? String == "call" }
        #expect(records.count == 1)
        let record = try #require(records.first?["call"] as? [String: Any])
        #expect(record["callId"] as? String == callID && record["outcome"] as? String == "answered")
        #expect(records.first?["senderId"] as? String == alice.id)

        // The endpoint's deliveries: all done (once the server recorded the last answer); the
        // first tried twice (500, then 200).
        func deliveries() async -> [[String: Any]] {
            liveJSON(await fetch(address, "GET", "/admin/webhooks/\(endpoint)/deliveries", headers: Self.admin).body)[
                "deliveries"] as? [[String: Any]] ?? []
        }
        #expect(
            await eventually(every: .milliseconds(50)) {
                let listed = await deliveries()
                return listed.count == 3 && listed.allSatisfy { $0["state"] as? String == "done" }
            })
        let deliveries = await deliveries()
        let first = try #require(deliveries.last)
        #expect(first["attempts"] as? Int == 2)
        #expect(
            ((first["recentAttempts"] as? [[String: Any]]) ?? []).compactMap { $0["status"] as? Int } == [200, 500])
        // A resend goes out again with the same event id (the receiver's idempotency key).
        let deliveryID = try #require(first["id"] as? String)
        let resent = await fetch(
            address, "POST", "/admin/webhooks/\(endpoint)/deliveries/\(deliveryID)/resend", headers: Self.admin)
        #expect(resent.status == 202, "\(resent.body)")
        #expect(await eventually { receiver.accepted.count == 4 })
        #expect((receiver.accepted.last?["event"] as? [String: Any])?["id"] as? String == ids[0])
        _ = receiver.process.stop()
    }

    @Test func aHungEndpointDelaysNoOtherAndAKilledServerLosesNoDelivery() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let secret = "whsec_live-test-secret-abcdefghij"
        // An endpoint that takes connections and never answers.
        let hung = try HungListener()
        defer { hung.close() }
        let healthy = try await Receiver(secret: secret)
        // A third endpoint is down (nothing listens on its port) until after the crash.
        let laterPort = try NginxExampleLiveTests.freePort()
        var settings = Self.settings
        settings["SWITCHBOARD_WEBHOOK_TIMEOUT_SECONDS"] = "60"
        var server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: settings)
        let hungEndpoint = try await Self.endpoint(
            server.address, url: "http://127.0.0.1:\(hung.port)/", secret: secret)
        _ = try await Self.endpoint(server.address, url: healthy.url, secret: secret)
        _ = try await Self.endpoint(server.address, url: "http://127.0.0.1:\(laterPort)/later", secret: secret)
        let alice = try await liveRegister(server.address, "alice"), bob = try await liveRegister(server.address, "bob")
        let conversation = try await liveBefriend(server.address, alice, bob)

        // A call that bob declines: the healthy endpoint hears all of it while the hung one's
        // first request is still waiting for an answer.
        let declined = try await Self.call(server.address, alice, conversation)
        #expect(await fetch(server.address, "POST", "/calls/\(declined)/decline", headers: bob.auth).status == 200)
        #expect(await eventually { healthy.types(ofCall: declined).count >= 3 })
        #expect(healthy.types(ofCall: declined) == ["call.ringing", "call.declined", "call.ended"])
        let hungDeliveries =
            liveJSON(
                await fetch(
                    server.address, "GET", "/admin/webhooks/\(hungEndpoint)/deliveries", headers: Self.admin
                ).body)["deliveries"] as? [[String: Any]] ?? []
        #expect(hungDeliveries.count == 3 && hungDeliveries.allSatisfy { $0["attempts"] as? Int == 0 })

        // A cancelled call while the third endpoint is down; the server is killed with its
        // deliveries pending, and started again.
        let cancelled = try await Self.call(server.address, alice, conversation)
        #expect(await fetch(server.address, "POST", "/calls/\(cancelled)/cancel", headers: alice.auth).status == 200)
        #expect(await eventually { healthy.types(ofCall: cancelled).count >= 3 })
        server.crash()
        // The hung endpoint is gone with it (its port refuses from now on).
        hung.close()
        let later = try await Receiver(secret: secret, port: laterPort)
        server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: settings)
        defer { _ = server.stop() }
        #expect(await eventually { later.accepted.count >= 6 })
        #expect(later.types(ofCall: declined) == ["call.ringing", "call.declined", "call.ended"])
        #expect(later.types(ofCall: cancelled) == ["call.ringing", "call.missed", "call.ended"])
        let ids = later.accepted.compactMap { ($0["event"] as? [String: Any])?["id"] as? String }
        #expect(ids.count == 6 && Set(ids).count == 6, "each event once")
        // The conversation has one record of each call.
        let records = await Self.messages(server.address, alice, conversation).compactMap {
            ($0["call"] as? [String: Any]).map { ($0["callId"] as? String ?? "", $0["outcome"] as? String ?? "") }
        }
        #expect(records.map(\.0) == [declined, cancelled] && records.map(\.1) == ["declined", "cancelled"])
        // The hung endpoint's deliveries were in flight (claimed) when the server was killed:
        // they were not lost either. Pointed at a live receiver, it gets each event once.
        let revived = try await Receiver(secret: secret)
        let moved = await fetch(
            server.address, "PATCH", "/admin/webhooks/\(hungEndpoint)", body: #"{"url":"\#(revived.url)"}"#,
            headers: Self.admin)
        #expect(moved.status == 200, "\(moved.body)")
        #expect(await eventually { revived.accepted.count >= 6 })
        #expect(revived.types(ofCall: declined) == ["call.ringing", "call.declined", "call.ended"])
        #expect(revived.types(ofCall: cancelled) == ["call.ringing", "call.missed", "call.ended"])
        let revivedIDs = revived.accepted.compactMap { ($0["event"] as? [String: Any])?["id"] as? String }
        #expect(revivedIDs.count == 6 && Set(revivedIDs) == Set(ids), "the same events, each once")
        _ = revived.process.stop()
        _ = later.process.stop()
        _ = healthy.process.stop()
    }

    @Test(.enabled(if: TestPostgres.available)) func threeInstancesOnPostgreSQLDeliverEachEventOnce() async throws {
        let fresh = try TestPostgres.freshDatabase()
        defer { fresh.drop() }
        let secret = "whsec_live-test-secret-klmnopqrst"
        let receiver = try await Receiver(secret: secret)
        var settings = Self.settings
        settings["SWITCHBOARD_DATABASE"] = "postgres"
        settings["SWITCHBOARD_POSTGRES_URL"] = fresh.url
        var servers: [ServerProcess] = []
        var scratch: [ScratchDirectory] = []
        defer {
            for server in servers { _ = server.stop() }
            for directory in scratch { directory.remove() }
        }
        for _ in 0..<3 {
            let data = ScratchDirectory()
            scratch.append(data)
            servers.append(
                try await ServerProcess.launch(
                    arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: settings))
        }
        let (a, b, c) = (servers[0].address, servers[1].address, servers[2].address)
        _ = try await Self.endpoint(a, url: receiver.url, secret: secret)
        let alice = try await liveRegister(a, "alice"), bob = try await liveRegister(b, "bob")
        let conversation = try await liveBefriend(c, alice, bob)
        var calls: [String] = []
        for round in 0..<3 {
            let callID = try await Self.call([a, b, c][round], alice, conversation)
            calls.append(callID)
            #expect(await fetch([b, c, a][round], "POST", "/calls/\(callID)/decline", headers: bob.auth).status == 200)
        }
        #expect(await eventually { receiver.accepted.count >= 9 })
        // Every instance's runner looks at the one outbox; each event still arrives once.
        try await Task.sleep(for: .seconds(2))
        let ids = receiver.accepted.compactMap { ($0["event"] as? [String: Any])?["id"] as? String }
        #expect(ids.count == 9 && Set(ids).count == 9, "\(ids.count) deliveries of \(Set(ids).count) events")
        for callID in calls {
            #expect(receiver.types(ofCall: callID) == ["call.ringing", "call.declined", "call.ended"])
        }
        _ = receiver.process.stop()
    }
}

/// A loopback listener that takes connections into its backlog and never answers them.
final class HungListener: Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw CocoaError(.fileWriteUnknown)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    private let closed = Atomic<Bool>(false)

    /// Closes it once (a second call does nothing: the descriptor may be another's by then).
    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        Glibc.close(descriptor)
    }
}
