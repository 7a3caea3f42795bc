import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
import SwitchboardTesting

/// An echo endpoint: echoes every message; "close:CODE:REASON" makes the server close.
func echoWebSocket(
    _ request: HTTPRequest, limits: WebSocketLimits, closes: Collected<WebSocketCloseInfo>
) -> HTTPResponse {
    WebSocket.upgrade(
        request, limits: limits,
        handlers: .init(
            onMessage: { socket, message in
                if case .text(let text) = message, text.hasPrefix("close:") {
                    let parts = text.split(separator: ":", maxSplits: 2)
                    socket.close(code: UInt16(parts[1]) ?? 1000, reason: parts.count > 2 ? String(parts[2]) : "")
                    return
                }
                socket.send(message)
            },
            onClose: { _, info in closes.append(info) }))
}

/// Our WebSocket against an independent implementation (Python's `websockets`) both ways, and
/// through our own client.
@Suite("WebSocket over loopback", .serialized, .timeLimit(.minutes(3)))
struct WebSocketLiveTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "websocket_interop.py"
    ).path
    static let limits = WebSocketLimits(maxFrameBytes: 256 * 1024, maxMessageBytes: 256 * 1024)

    @Test func anIndependentClientTalksToOurServer() async throws {
        let closes = Collected<WebSocketCloseInfo>()
        try await withServer(handler: { echoWebSocket($0, limits: Self.limits, closes: closes) }) { server, port in
            let run = try await ProcessLauncher.output(
                of: "/usr/bin/env", ["python3", Self.script, "client", "ws://127.0.0.1:\(port)/echo"])
            #expect(run.status == 0)
            let seen = try #require(
                try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "output: \(run.output)"
            )
            #expect(seen["text"] as? String == "héllo")
            #expect(seen["binary"] as? [Int] == [0, 125, 126, 65535, 65536, 200000])
            #expect(seen["fragmented"] as? String == "abcdef")
            #expect(seen["pong"] as? Bool == true)
            #expect(seen["serverClose"] as? [AnyHashable] == [4001, "done"])
            #expect(seen["clientClose"] as? [Int] == [4000])
            #expect(seen["tooBig"] as? Int == Int(WebSocketCloseCode.messageTooBig))
            #expect(await eventually { closes.items.count == 3 })
            let infos = closes.items
            #expect(infos.contains(WebSocketCloseInfo(code: 4001, reason: "done", initiatedByPeer: false)))
            #expect(infos.contains(WebSocketCloseInfo(code: 4000, reason: "bye", initiatedByPeer: true)))
            #expect(infos.contains { $0.code == WebSocketCloseCode.messageTooBig && !$0.initiatedByPeer })
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func ourClientTalksToAnIndependentServerAndAnswersItsPings() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script, "server"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        defer { if process.isRunning { process.terminate() } }
        let lines = LineReader(output.fileHandleForReading)
        let port = try #require(Int(await lines.next() ?? ""))
        let received = Collected<WebSocketMessage>()
        let client = try await offPool {
            try WebSocketClient.connect(
                host: "127.0.0.1", port: port, path: "/", limits: Self.limits,
                handlers: .init(
                    onMessage: { message in received.append(message) }))
        }
        #expect(client.send(.text("héllo")))
        #expect(client.send(.binary([UInt8](repeating: 7, count: 100_000))))
        #expect(await eventually { received.items.count == 2 })
        #expect(received.items.first == .text("héllo"))
        #expect(received.items.last == .binary([UInt8](repeating: 7, count: 100_000)))
        // The server pings every 0.2 s and gives up after 5 s without a pong: still open after 1.5 s.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(client.isOpen)
        client.close(code: 1000, reason: "done")
        let info = await client.closed()
        #expect(info == WebSocketCloseInfo(code: 1000, reason: "done", initiatedByPeer: false))
        let seen = try #require(
            try JSONSerialization.jsonObject(with: Data((await lines.next() ?? "").utf8)) as? [String: Any])
        #expect(seen["messages"] as? [Int] == [5, 100_000])  // characters of the text, bytes of the binary
        #expect(seen["closeCode"] as? Int == 1000)
        #expect(seen["timedOut"] == nil)
    }

    @Test func ourClientAndServerTalkAndAServerRefusalIsReadable() async throws {
        let closes = Collected<WebSocketCloseInfo>()
        try await withServer(handler: { request in
            if request.path == "/no" { return HTTPServerConfiguration.jsonErrorEnvelope(403, "FORBIDDEN", "not yours") }
            return echoWebSocket(request, limits: Self.limits, closes: closes)
        }) { server, port in
            let refused = await offPool { () -> WebSocketClientError? in
                do {
                    _ = try WebSocketClient.connect(host: "127.0.0.1", port: port, path: "/no", handlers: .init())
                    return nil
                } catch {
                    return error as? WebSocketClientError
                }
            }
            guard case .refused(let status, let body) = refused else {
                Issue.record("not refused: \(String(describing: refused))")
                return
            }
            #expect(status == 403)
            #expect(body.contains("FORBIDDEN"))

            let received = Collected<WebSocketMessage>()
            let client = try await offPool {
                try WebSocketClient.connect(
                    host: "127.0.0.1", port: port, path: "/echo", limits: Self.limits,
                    handlers: .init(
                        onMessage: { message in received.append(message) }))
            }
            for index in 0..<200 { client.send(.binary([UInt8(index)] + [UInt8](repeating: 1, count: 320))) }
            #expect(await eventually { received.items.count == 200 })
            // Order is kept.
            #expect(
                received.items.enumerated().allSatisfy {
                    $0.element == .binary([UInt8($0.offset)] + [UInt8](repeating: 1, count: 320))
                })
            client.send(.text("close:4002:server says so"))
            let info = await client.closed()
            #expect(info == WebSocketCloseInfo(code: 4002, reason: "server says so", initiatedByPeer: true))
            #expect(
                await eventually {
                    closes.items == [WebSocketCloseInfo(code: 4002, reason: "server says so", initiatedByPeer: false)]
                })
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aClientThatVanishesIsReportedAs1006AndShutdownSays1001() async throws {
        let closes = Collected<WebSocketCloseInfo>()
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 1)
        configuration.idleTimeout = .seconds(60)
        let server = HTTPServer(configuration: configuration) { echoWebSocket($0, limits: Self.limits, closes: closes) }
        let port = try server.start().port
        let vanishing = try await offPool {
            try WebSocketClient.connect(host: "127.0.0.1", port: port, path: "/", handlers: .init())
        }
        vanishing.abort()
        #expect(
            await eventually { closes.items == [WebSocketCloseInfo(code: 1006, reason: "", initiatedByPeer: true)] })
        let staying = try await offPool {
            try WebSocketClient.connect(host: "127.0.0.1", port: port, path: "/", handlers: .init())
        }
        await server.shutdown(gracePeriod: .seconds(30))
        let info = await staying.closed()
        #expect(info == WebSocketCloseInfo(code: 1001, reason: "server shutting down", initiatedByPeer: true))
    }
}

/// Values gathered from callbacks on other threads.
final class Collected<Item: Sendable>: Sendable {
    private let storage = Mutex<[Item]>([])
    func append(_ item: Item) { storage.withLock { $0.append(item) } }
    var items: [Item] { storage.withLock { $0 } }
}

/// Reads lines from a pipe off the cooperative pool.
final class LineReader: Sendable {
    private let handle: FileHandle
    private let buffer = Mutex<[UInt8]>([])

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at the end of the stream.
    func next() async -> String? {
        await offPool {
            while true {
                if let line = self.buffer.withLock({ buffer -> String? in
                    guard let newline = buffer.firstIndex(of: 10) else { return nil }
                    defer { buffer.removeSubrange(0...newline) }
                    return String(decoding: buffer[..<newline], as: UTF8.self)
                }) {
                    return line
                }
                let data = self.handle.availableData
                if data.isEmpty { return nil }
                self.buffer.withLock { $0.append(contentsOf: data) }
            }
        }
    }
}
