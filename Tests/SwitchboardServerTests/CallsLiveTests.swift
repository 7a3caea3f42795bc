import Foundation
import Testing

/// Calls through the real binary: LiveKit's own verifier accepts our media tokens, and ring
/// timeouts survive a restart.
@Suite("Calls through the binary", .serialized)
struct CallsLiveTests {
    private typealias Account = LiveAccount
    private func json(_ text: String) -> [String: Any] { liveJSON(text) }
    private func register(_ address: String, _ name: String) async throws -> Account { try await liveRegister(address, name) }

    private func friendsWithConversation(_ address: String) async throws -> (Account, Account, String) {
        let alice = try await register(address, "alice"), bob = try await register(address, "bob")
        return (alice, bob, try await liveBefriend(address, alice, bob))
    }

    private func startCall(_ address: String, _ caller: Account, _ conversation: String, mode: String) async throws -> String {
        let created = await fetch(
            address, "POST", "/calls",
            body: #"{"scopeKind":"conversation","scopeId":"\#(conversation)","mode":"\#(mode)","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(created.status == 201)
        return try #require(json(created.body)["id"] as? String)
    }

    private static let fastHashes = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "10"]

    @Test func livekitsOwnVerifierAcceptsTheMediaToken() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let environment = Self.fastHashes.merging([
            "SWITCHBOARD_LIVEKIT_API_KEY": "APIswitchboardTest", "SWITCHBOARD_LIVEKIT_API_SECRET": "a-long-test-secret-of-32-bytes-or-so",
            "SWITCHBOARD_LIVEKIT_URL": "wss://media.example.test",
        ]) { $1 }
        let server = try ServerProcess(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = server.stop() }
        let (alice, bob, conversation) = try await friendsWithConversation(server.address)
        let callID = try await startCall(server.address, alice, conversation, mode: "audio")
        #expect(await fetch(server.address, "POST", "/calls/\(callID)/accept", headers: bob.auth).status == 200)
        let minted = await fetch(server.address, "POST", "/calls/\(callID)/media-token", headers: bob.auth)
        #expect(minted.status == 200)
        let body = json(minted.body)
        #expect(body["url"] as? String == "wss://media.example.test")
        let token = try #require(body["token"] as? String)

        let verified = try runVerifier(token, key: "APIswitchboardTest", secret: "a-long-test-secret-of-32-bytes-or-so")
        #expect(verified.status == 0, "LiveKit rejected the token: \(verified.stderr)")
        let claims = json(verified.stdout)
        #expect(claims["identity"] as? String == bob.id)
        #expect(claims["room"] as? String == "call_\(callID)")
        #expect(claims["room_join"] as? Bool == true)
        #expect(claims["can_subscribe"] as? Bool == true)
        #expect(claims["can_publish"] as? Bool == true)
        #expect(claims["can_publish_data"] as? Bool == false)
        #expect(claims["can_publish_sources"] as? [String] == ["microphone"])
        #expect(claims["room_admin"] as? Bool != true && claims["room_create"] as? Bool != true)
        // A wrong secret is rejected by the same verifier.
        #expect(try runVerifier(token, key: "APIswitchboardTest", secret: "not-the-secret-at-all-32-bytes!!").status != 0)
    }

    @Test func aRingTimeoutThatPassedWhileTheServerWasDownIsAppliedAtStartUp() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let environment = Self.fastHashes.merging(["SWITCHBOARD_RING_TIMEOUT_SECONDS": "5"]) { $1 }
        let first = try ServerProcess(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        let (alice, bob, conversation) = try await friendsWithConversation(first.address)
        let cursor = try #require(json(await fetch(first.address, "GET", "/me", headers: bob.auth).body)["eventCursor"] as? Int)
        let callID = try await startCall(first.address, alice, conversation, mode: "video")
        #expect(first.stop() == 0)

        try await Task.sleep(for: .seconds(6))  // the ring window passes while nothing runs
        let second = try ServerProcess(arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = second.stop() }
        var call: [String: Any] = [:]
        for _ in 0..<50 {
            call = json(await fetch(second.address, "GET", "/calls/\(callID)", headers: alice.auth).body)
            if call["state"] as? String == "ended" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(call["state"] as? String == "ended")
        #expect(call["endReason"] as? String == "missed")
        #expect((call["invitations"] as? [[String: Any]])?.first?["state"] as? String == "missed")
        // Both events were written: the ring, then the miss.
        let events = (json(await fetch(second.address, "GET", "/events?after=\(cursor)&wait=0", headers: bob.auth).body)["events"] as? [[String: Any]]) ?? []
        #expect(events.map { $0["kind"] as? String } == ["call_changed", "call_changed"])
        #expect(events.allSatisfy { $0["callId"] as? String == callID })
    }

    /// Runs scripts/verify_livekit_token.py (LiveKit's Python verifier).
    private func runVerifier(_ token: String, key: String, secret: String) throws -> (status: Int32, stdout: String, stderr: String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("scripts/verify_livekit_token.py").path, token, key, secret]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate() }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stdout, stderr)
    }
}
