import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardTesting
import Testing

/// One participant's audio socket in a live test, and what it heard.
final class AudioPeer: Sendable {
    let socket: WebSocketClient
    private let frames = Mutex<[[Int16]]>([])
    private let closeInfo = Mutex<WebSocketCloseInfo?>(nil)

    private init(socket: WebSocketClient) { self.socket = socket }

    /// Opens `path` with the media token.
    static func connect(_ address: String, path: String, token: String) async throws -> AudioPeer {
        let parts = address.split(separator: ":")
        let sink = Sink()
        let socket = try await offPool {
            try WebSocketClient.connect(
                host: String(parts[0]), port: Int(parts[1])!, path: path, headers: ["Authorization": "Bearer \(token)"],
                handlers: .init(onMessage: { message in sink.heard(message) }, onClose: { info in sink.ended(info) }))
        }
        let peer = AudioPeer(socket: socket)
        sink.peer.withLock { $0 = peer }
        return peer
    }

    /// Forwards the socket's callbacks to the peer, which exists only once connected.
    final class Sink: Sendable {
        let peer = Mutex<AudioPeer?>(nil)
        private let early = Mutex<[WebSocketMessage]>([])
        func heard(_ message: WebSocketMessage) {
            guard case .binary(let bytes) = message else { return }
            if let peer = peer.withLock({ $0 }) { peer.frames.withLock { $0.append(RelayAudioFormat.samples(bytes)) } }
        }
        func ended(_ info: WebSocketCloseInfo) { peer.withLock { $0 }?.closeInfo.withLock { $0 = info } }
    }

    /// Sends one frame whose every sample is `value`.
    @discardableResult
    func send(constant value: Int16) -> Bool {
        socket.send(.binary(RelayAudioFormat.bytes([Int16](repeating: value, count: RelayAudioFormat.samplesPerFrame))))
    }

    var heard: [[Int16]] { frames.withLock { $0 } }
    var closed: WebSocketCloseInfo? { closeInfo.withLock { $0 } }
}

/// The built-in audio relay through the real binary (its default media backend).
@Suite("The audio relay through the binary", .serialized, .timeLimit(.minutes(5)))
struct RelayLiveTests {
    private static let environment = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"]

    func launch() async throws -> (ServerProcess, ScratchDirectory) {
        let data = ScratchDirectory()
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: Self.environment)
        return (server, data)
    }

    /// Rings `scopeId`; returns the call's id.
    func call(_ address: String, _ caller: LiveAccount, _ kind: String, _ scope: String) async throws -> String {
        let created = await fetch(
            address, "POST", "/calls",
            body: #"{"scopeKind":"\#(kind)","scopeId":"\#(scope)","mode":"audio","clientId":"\#(UUID().uuidString)"}"#,
            headers: caller.auth)
        #expect(created.status == 201)
        return try #require(liveJSON(created.body)["id"] as? String)
    }

    /// Accepts with the media token in the answer; returns the socket's path and the token.
    func accept(
        _ address: String, _ callID: String, _ person: LiveAccount
    ) async throws -> (path: String, token: String) {
        let accepted = await fetch(
            address, "POST", "/calls/\(callID)/accept", body: #"{"mediaToken":true}"#, headers: person.auth)
        #expect(accepted.status == 200, "\(accepted.body)")
        let media = try #require(liveJSON(accepted.body)["media"] as? [String: Any])
        return (try #require(media["url"] as? String), try #require(media["token"] as? String))
    }

    /// Alice called Bob, he answered; both have their media tokens.
    func answeredCall(
        _ address: String
    ) async throws
        -> (
            alice: LiveAccount, bob: LiveAccount, callID: String, aliceMedia: (path: String, token: String),
            bobMedia: (path: String, token: String)
        )
    {
        let alice = try await liveRegister(address, "alice"), bob = try await liveRegister(address, "bob")
        let conversation = try await liveBefriend(address, alice, bob)
        let callID = try await call(address, alice, "conversation", conversation)
        let bobMedia = try await accept(address, callID, bob)
        return (alice, bob, callID, try await mediaToken(address, callID, alice), bobMedia)
    }

    func mediaToken(
        _ address: String, _ callID: String, _ person: LiveAccount
    ) async throws -> (path: String, token: String) {
        let minted = await fetch(address, "POST", "/calls/\(callID)/media-token", headers: person.auth)
        #expect(minted.status == 200, "\(minted.body)")
        let media = liveJSON(minted.body)
        return (try #require(media["url"] as? String), try #require(media["token"] as? String))
    }

    @Test func twoParticipantsHearEachOtherFrameForFrameAndTheCallsEndClosesBoth() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let alice = try await liveRegister(server.address, "alice"), bob = try await liveRegister(server.address, "bob")
        let conversation = try await liveBefriend(server.address, alice, bob)
        let callID = try await call(server.address, alice, "conversation", conversation)
        let bobMedia = try await accept(server.address, callID, bob)
        #expect(bobMedia.path == "/calls/\(callID)/audio")
        let aliceMedia = try await mediaToken(server.address, callID, alice)
        let aliceSocket = try await AudioPeer.connect(server.address, path: aliceMedia.path, token: aliceMedia.token)
        let bobSocket = try await AudioPeer.connect(server.address, path: bobMedia.path, token: bobMedia.token)
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "2" })

        // A phone's pace: a frame every 20 ms (a burst far beyond that is what a slow receiver
        // looks like, and is dropped; see the last test).
        for index in 0..<50 {
            aliceSocket.send(constant: Int16(index * 100))
            if index < 10 { bobSocket.send(constant: Int16(-index)) }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(
            await eventually(seconds: 5) { bobSocket.heard.count == 50 && aliceSocket.heard.count == 10 },
            "bob heard \(bobSocket.heard.count), alice \(aliceSocket.heard.count)")
        // Forwarded as sent, in order, sample for sample.
        #expect(
            bobSocket.heard.enumerated().allSatisfy {
                $0.element == [Int16](repeating: Int16($0.offset * 100), count: 160)
            })
        #expect(
            aliceSocket.heard.enumerated().allSatisfy {
                $0.element == [Int16](repeating: Int16(-$0.offset), count: 160)
            })

        // Bob leaves: the conversation call ends, its room goes, and both sockets close saying so.
        #expect(await fetch(server.address, "POST", "/calls/\(callID)/leave", headers: bob.auth).status == 200)
        #expect(await eventually { aliceSocket.closed != nil && bobSocket.closed != nil })
        #expect(aliceSocket.closed == WebSocketCloseInfo(code: 4001, reason: "the call ended", initiatedByPeer: true))
        #expect(bobSocket.closed?.code == 4001)
        // A token of the ended call opens nothing.
        let refused = await fetch(
            server.address, "GET", aliceMedia.path,
            headers: [
                "Authorization": "Bearer \(aliceMedia.token)", "Upgrade": "websocket", "Connection": "Upgrade",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
            ])
        #expect(refused.status == 403)
        #expect(refused.body.contains("NOT_PARTICIPANT"))
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "0" })
        // Both sockets' counts are in (each is added when its socket closes).
        #expect(
            await eventually {
                let received = await liveMetric(server.address, #"switchboard_relay_frames_total{outcome="received"}"#)
                let sent = await liveMetric(server.address, #"switchboard_relay_frames_total{outcome="sent"}"#)
                return received == "60" && sent == "60"
            })
    }

    @Test func aGroupHearsEveryoneElseMixedAndSaturatedThenForwardingWhenTwoAreLeft() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let owner = try await liveRegister(server.address, "owner")
        let first = try await liveRegister(server.address, "first"),
            second = try await liveRegister(server.address, "second")
        _ = try await liveBefriend(server.address, owner, first)
        _ = try await liveBefriend(server.address, owner, second)
        let group = try #require(
            liveJSON(
                await fetch(
                    server.address, "POST", "/groups",
                    body: #"{"name":"team","memberIds":["\#(first.id)","\#(second.id)"]}"#, headers: owner.auth
                ).body)["id"] as? String)
        let callID = try await call(server.address, owner, "group", group)
        let firstMedia = try await accept(server.address, callID, first)
        let secondMedia = try await accept(server.address, callID, second)
        let ownerMedia = try await mediaToken(server.address, callID, owner)
        let ownerSocket = try await AudioPeer.connect(server.address, path: ownerMedia.path, token: ownerMedia.token)
        let firstSocket = try await AudioPeer.connect(server.address, path: firstMedia.path, token: firstMedia.token)
        let secondSocket = try await AudioPeer.connect(server.address, path: secondMedia.path, token: secondMedia.token)
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "3" })

        // Everyone talks at once, a frame every 20 ms: the owner hears 10000 + 30000, clipped
        // to 32767; the first hears 1000 + 30000; the second 1000 + 10000.
        let expected: [(AudioPeer, Int16)] = [(ownerSocket, 32767), (firstSocket, 31000), (secondSocket, 11000)]
        let heardFullMix = await eventually(seconds: generousWait, every: .milliseconds(20)) {
            ownerSocket.send(constant: 1000)
            firstSocket.send(constant: 10000)
            secondSocket.send(constant: 30000)
            return expected.allSatisfy { peer, value in
                peer.heard.contains { $0 == [Int16](repeating: value, count: 160) }
            }
        }
        #expect(heardFullMix)
        // A tick where someone's frame had not arrived yet mixes the others only: every frame
        // heard is a mix of the other two's values, never one's own voice (and nothing is sent
        // to whoever nobody else spoke to).
        let partial: [(AudioPeer, Set<Int16>)] = [
            (ownerSocket, [10000, 30000, 32767]), (firstSocket, [1000, 30000, 31000]),
            (secondSocket, [1000, 10000, 11000]),
        ]
        for (peer, values) in partial {
            #expect(peer.heard.allSatisfy { frame in Set(frame).count == 1 && values.contains(frame[0]) })
        }

        // The second leaves: their socket is closed as having left, and the two left are
        // forwarded to each other frame for frame.
        #expect(await fetch(server.address, "POST", "/calls/\(callID)/leave", headers: second.auth).status == 200)
        #expect(await eventually { secondSocket.closed != nil })
        #expect(
            secondSocket.closed == WebSocketCloseInfo(code: 4000, reason: "you left the call", initiatedByPeer: true))
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "2" })
        let before = firstSocket.heard.count
        for _ in 0..<5 { ownerSocket.send(constant: 1234) }
        #expect(await eventually { firstSocket.heard.count >= before + 5 })
        #expect(firstSocket.heard.suffix(5).allSatisfy { $0 == [Int16](repeating: 1234, count: 160) })
        #expect(ownerSocket.closed == nil)
    }

    @Test func aBlockEndsTheCallAndClosesBothSocketsAndTheTokensOpenNothingMore() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let (alice, bob, _, aliceMedia, bobMedia) = try await answeredCall(server.address)
        let aliceSocket = try await AudioPeer.connect(server.address, path: aliceMedia.path, token: aliceMedia.token)
        let bobSocket = try await AudioPeer.connect(server.address, path: bobMedia.path, token: bobMedia.token)
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "2" })
        #expect(await fetch(server.address, "PUT", "/blocks/\(bob.id)", headers: alice.auth).status == 200)
        #expect(await eventually { aliceSocket.closed != nil && bobSocket.closed != nil })
        #expect(bobSocket.closed?.code == 4001 && aliceSocket.closed?.code == 4001)
        // The job was carried out (the gauge is the runner's count after its pass).
        #expect(await eventually { await liveMetric(server.address, "switchboard_media_jobs_pending") == "0" })
        let again = await fetch(
            server.address, "GET", bobMedia.path,
            headers: [
                "Authorization": "Bearer \(bobMedia.token)", "Upgrade": "websocket", "Connection": "Upgrade",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
            ])
        #expect(again.status == 403)
    }

    @Test func strangersBadTokensBadFramesAndASecondSocketAreTurnedAway() async throws {
        let (server, data) = try await launch()
        defer {
            _ = server.stop()
            data.remove()
        }
        let alice = try await liveRegister(server.address, "alice"), bob = try await liveRegister(server.address, "bob")
        let conversation = try await liveBefriend(server.address, alice, bob)
        let callID = try await call(server.address, alice, "conversation", conversation)
        let path = "/calls/\(callID)/audio"
        let upgrade = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
        ]
        // While it rings there is no media token to have.
        #expect(await fetch(server.address, "POST", "/calls/\(callID)/media-token", headers: alice.auth).status == 403)
        let bobMedia = try await accept(server.address, callID, bob)

        func status(_ headers: [String: String], path: String = path) async -> (Int, String) {
            let answer = await fetch(server.address, "GET", path, headers: headers)
            return (answer.status, (liveJSON(answer.body)["error"] as? [String: Any])?["code"] as? String ?? "")
        }
        #expect(await status(upgrade) == (401, "UNAUTHORIZED"))
        #expect(
            await status(upgrade.merging(["Authorization": "Bearer nonsense"]) { $1 }) == (401, "MEDIA_TOKEN_INVALID"))
        // The chat token is never a media token.
        #expect(await status(upgrade.merging(bob.auth) { $1 }) == (401, "MEDIA_TOKEN_INVALID"))
        let bearer = ["Authorization": "Bearer \(bobMedia.token)"]
        #expect(await status(upgrade.merging(bearer) { $1 }, path: "/calls/no-such-call/audio") == (404, "NOT_FOUND"))
        // A plain GET is told what the resource is.
        #expect(await status(bearer) == (426, "WEBSOCKET_UPGRADE_REQUIRED"))
        #expect(
            await status(upgrade.merging(bearer) { $1 }.merging(["Sec-WebSocket-Version": "8"]) { $1 }) == (
                426, "WEBSOCKET_VERSION_UNSUPPORTED"
            ))

        // The token also works as ?token= (browsers cannot set headers on a WebSocket).
        let parts = server.address.split(separator: ":")
        let byQuery = try await offPool {
            try WebSocketClient.connect(
                host: String(parts[0]), port: Int(parts[1])!, path: "\(path)?token=\(bobMedia.token)", handlers: .init()
            )
        }
        // The same user connecting again replaces the older socket.
        let again = try await AudioPeer.connect(server.address, path: path, token: bobMedia.token)
        #expect(
            await byQuery.closed()
                == WebSocketCloseInfo(code: 4002, reason: "connected again elsewhere", initiatedByPeer: true))
        // A frame of the wrong size, or text, ends the socket with the reason.
        again.socket.send(.binary([1, 2, 3]))
        #expect(await eventually { again.closed != nil })
        #expect(again.closed?.code == WebSocketCloseCode.invalidPayload)
        let texting = try await AudioPeer.connect(server.address, path: path, token: bobMedia.token)
        texting.socket.send(.text("hello"))
        #expect(await eventually { texting.closed != nil })
        #expect(texting.closed?.code == WebSocketCloseCode.unsupportedData)
    }

    @Test func aReceiverThatDoesNotReadLosesFramesAndTheSenderIsUnharmed() async throws {
        // Ten seconds of audio in a burst: the sender's own frame limit is lifted here.
        let data = ScratchDirectory()
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: Self.environment.merging(["SWITCHBOARD_RELAY_MAX_FRAMES_PER_SECOND": "10000"]) { $1 })
        defer {
            _ = server.stop()
            data.remove()
        }
        let (_, _, _, aliceMedia, bobMedia) = try await answeredCall(server.address)
        let aliceSocket = try await AudioPeer.connect(server.address, path: aliceMedia.path, token: aliceMedia.token)
        // Bob's phone opens the socket and then never reads (its receive buffer kept small).
        let parts = server.address.split(separator: ":")
        let bobFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var small: Int32 = 4096
        setsockopt(bobFD, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(Int(parts[1])!).bigEndian
        inet_pton(AF_INET, String(parts[0]), &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(bobFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        let handshake =
            "GET \(bobMedia.path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(bobMedia.token)\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        _ = Array(handshake.utf8).withUnsafeBytes { send(bobFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "2" })

        // Ten seconds of audio at once, far more than Bob's buffers hold.
        for _ in 0..<500 { aliceSocket.send(constant: 7) }
        let silence = [Int16](repeating: 0, count: 160)
        for _ in 0..<4500 { aliceSocket.socket.send(.binary(RelayAudioFormat.bytes(silence))) }
        #expect(aliceSocket.socket.isOpen)
        close(bobFD)
        #expect(await eventually { await liveMetric(server.address, "switchboard_relay_sockets") == "1" })
        #expect(
            await eventually {
                await liveMetric(server.address, #"switchboard_relay_frames_total{outcome="sent"}"#) != nil
            })
        let dropped = await liveMetric(
            server.address, #"switchboard_relay_frames_total{outcome="dropped_slow_receiver"}"#)
        let sent = await liveMetric(server.address, #"switchboard_relay_frames_total{outcome="sent"}"#)
        #expect((Int(dropped ?? "") ?? 0) > 0, "dropped \(dropped ?? "none"), sent \(sent ?? "none")")
        // Bounded: what was queued for Bob is a small part of the ten seconds.
        #expect((Int(sent ?? "") ?? 5000) < 2500, "sent \(sent ?? "none")")
        #expect(aliceSocket.closed == nil)
    }
}
