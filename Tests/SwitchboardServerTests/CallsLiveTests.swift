import Foundation
import Synchronization
import SwitchboardTesting
import Testing

/// Calls through the real binary: LiveKit's own verifier accepts our media tokens, and ring
/// timeouts survive a restart.
@Suite("Calls through the binary", .serialized, .timeLimit(.minutes(5)))
struct CallsLiveTests {
    private typealias Account = LiveAccount
    private func json(_ text: String) -> [String: Any] { liveJSON(text) }
    private func register(_ address: String, _ name: String) async throws -> Account {
        try await liveRegister(address, name)
    }

    private func friendsWithConversation(_ address: String) async throws -> (Account, Account, String) {
        let alice = try await register(address, "alice"), bob = try await register(address, "bob")
        return (alice, bob, try await liveBefriend(address, alice, bob))
    }

    private func startCall(
        _ address: String, _ caller: Account, _ conversation: String, mode: String
    ) async throws -> String {
        try await createCall(address, caller, conversation, mode: mode).id
    }

    /// Rings the conversation; returns the call's id and the server's record of it.
    private func createCall(
        _ address: String, _ caller: Account, _ conversation: String, mode: String
    ) async throws -> (id: String, call: [String: Any]) {
        let created = await fetch(
            address, "POST", "/calls",
            body:
                #"{"scopeKind":"conversation","scopeId":"\#(conversation)","mode":"\#(mode)","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(created.status == 201)
        let call = json(created.body)
        return (try #require(call["id"] as? String), call)
    }

    /// A timestamp of the API (`2026-11-30T04:10:32.880Z`).
    private func date(_ value: Any?) -> Date? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (value as? String).flatMap { format.date(from: $0) }
    }

    private static let fastHashes = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"]

    @Test func livekitsOwnVerifierAcceptsTheMediaToken() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let environment = Self.fastHashes.merging([
            "SWITCHBOARD_LIVEKIT_API_KEY": "APIswitchboardTest",
            "SWITCHBOARD_LIVEKIT_API_SECRET": "a-long-test-secret-of-32-bytes-or-so",
            "SWITCHBOARD_LIVEKIT_URL": "wss://media.example.test", "SWITCHBOARD_MEDIA_BACKEND": "none",
        ]) { $1 }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = server.stop() }
        let (alice, bob, conversation) = try await friendsWithConversation(server.address)
        let callID = try await startCall(server.address, alice, conversation, mode: "audio")
        #expect(await fetch(server.address, "POST", "/calls/\(callID)/accept", headers: bob.auth).status == 200)
        let minted = await fetch(server.address, "POST", "/calls/\(callID)/media-token", headers: bob.auth)
        #expect(minted.status == 200)
        let body = json(minted.body)
        #expect(body["url"] as? String == "wss://media.example.test")
        let token = try #require(body["token"] as? String)

        let verified = try await runVerifier(
            token, key: "APIswitchboardTest", secret: "a-long-test-secret-of-32-bytes-or-so")
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
        #expect(
            try await runVerifier(token, key: "APIswitchboardTest", secret: "not-the-secret-at-all-32-bytes!!").status
                != 0)
    }

    @Test func aRingTimeoutThatPassedWhileTheServerWasDownIsAppliedAtStartUp() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        // Ten seconds to ring: far longer than the first server needs to stop (normally a few
        // milliseconds), so the deadline falls while no server runs.
        let ringSeconds = 10.0
        let environment = Self.fastHashes.merging(["SWITCHBOARD_RING_TIMEOUT_SECONDS": "\(Int(ringSeconds))"]) { $1 }
        let first = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = first.stop() }
        let (alice, bob, conversation) = try await friendsWithConversation(first.address)
        let cursor = try #require(
            json(await fetch(first.address, "GET", "/me", headers: bob.auth).body)["eventCursor"] as? Int)
        let (callID, created) = try await createCall(first.address, alice, conversation, mode: "video")
        let deadline = try #require(date(created["createdAt"])).addingTimeInterval(ringSeconds)
        #expect(await first.terminate() == 0)
        let stoppedAt = Date()

        // The ring window passes while nothing runs: wait for the deadline itself (same machine,
        // same wall clock), not for a fixed time.
        while Date() <= deadline { try await Task.sleep(for: .milliseconds(100)) }
        let second = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = second.stop() }
        let lastRead = Mutex("")
        #expect(
            await eventually {
                let body = await fetch(second.address, "GET", "/calls/\(callID)", headers: alice.auth).body
                lastRead.withLock { $0 = body }
                return liveJSON(body)["state"] as? String == "ended"
            })
        let call = json(lastRead.withLock { $0 })
        #expect(call["state"] as? String == "ended")
        #expect(call["endReason"] as? String == "missed")
        // Ended by the second server: the first one had stopped before its deadline.
        let endedAt = try #require(date(call["endedAt"]))
        #expect(stoppedAt < deadline, "the first server took the whole ring window to stop")
        #expect(
            endedAt >= stoppedAt.addingTimeInterval(-0.001),
            "ended at \(endedAt), before the first server stopped at \(stoppedAt)")
        #expect((call["invitations"] as? [[String: Any]])?.first?["state"] as? String == "missed")
        // Every event was written: the ring, the miss, then the conversation's record of the call.
        let events =
            (json(await fetch(second.address, "GET", "/events?after=\(cursor)&wait=0", headers: bob.auth).body)[
                "events"] as? [[String: Any]]) ?? []
        #expect(events.map { $0["kind"] as? String } == ["call_changed", "call_changed", "message"])
        #expect(events.prefix(2).allSatisfy { $0["callId"] as? String == callID })
        #expect(events.last?["messageId"] as? String != nil)
    }

    /// Runs scripts/verify_livekit_token.py (LiveKit's Python verifier) on a thread of its own.
    private func runVerifier(
        _ token: String, key: String, secret: String
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await offPool { Result { try Self.runVerifierBlocking(token, key: key, secret: secret) } }.get()
    }

    private static func runVerifierBlocking(
        _ token: String, key: String, secret: String
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("scripts/verify_livekit_token.py").path, token, key, secret,
        ]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try ProcessLauncher.run(process)
        let deadline = Date().addingTimeInterval(generousWait)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate() }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stdout, stderr)
    }
}
