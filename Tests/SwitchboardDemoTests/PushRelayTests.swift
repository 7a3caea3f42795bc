import Foundation
import Glibc
import Synchronization
import Testing
import SwitchboardAPNsEmulator
import SwitchboardCrypto
import SwitchboardDemo
import SwitchboardNetSim
import SwitchboardPush
import SwitchboardTesting

/// The relay's line and frames (no I/O).
@Suite("Push relay: request line and frames", .timeLimit(.minutes(2)))
struct PushRelayFormatTests {
    @Test(arguments: [
        ("ABCDEF0123", PushRelayRequest(token: "abcdef0123", after: 0)),
        ("abcdef0123 0", PushRelayRequest(token: "abcdef0123", after: 0)),
        ("abcdef0123 42", PushRelayRequest(token: "abcdef0123", after: 42)),
    ])
    func goodLinesParse(line: String, request: PushRelayRequest) {
        #expect(PushRelayRequest(line: line) == request)
        #expect(PushRelayRequest(line: String(request.line.dropLast())) == request, "the line it sends parses back")
    }

    @Test(arguments: [
        "", " 1", "abc -1", "abc 1 2", "abc x", "xyz 1", "abc  1", String(repeating: "a", count: 201), "ａｂ 1",
    ])
    func badLinesAreRefused(line: String) {
        #expect(PushRelayRequest(line: line) == nil)
    }

    @Test func framesSurviveAnySplitAndKeepThePayload() throws {
        let payload = Array(#"{"aps":{},"callId":"c1","nested":{"n":[1,2]}}"#.utf8)
        let stream =
            PushRelayFrame.encode(index: 7, receivedAtMs: 1_700_000_000_123, payload: payload)
            + PushRelayFrame.encode(index: 8, receivedAtMs: 1_700_000_000_456, payload: Array(#"{"b":true}"#.utf8))
        for split in 1..<stream.count {
            var decoder = PushRelayFrame.Decoder()
            var bodies: [[UInt8]] = []
            for chunk in [stream[..<split], stream[split...]] {
                decoder.append(chunk)
                while let body = try decoder.next() { bodies.append(body) }
            }
            #expect(bodies.count == 2, "split at \(split)")
        }
        var decoder = PushRelayFrame.Decoder()
        decoder.append(stream)
        let body = try #require(try decoder.next())
        let first = try #require(PushRelayFrame.decode(body, deliveredAt: Date()))
        #expect(first.index == 7 && first.receivedAtMs == 1_700_000_000_123)
        let object = try #require(try JSONSerialization.jsonObject(with: first.payload) as? [String: Any])
        #expect(object["callId"] as? String == "c1")
        #expect((object["nested"] as? [String: Any])?["n"] as? [Int] == [1, 2])
    }

    @Test func theLengthIsBigEndianAndTheBodyIsTheDocumentedJSON() throws {
        let frame = PushRelayFrame.encode(index: 3, receivedAtMs: 99, payload: Array(#"{"a":1}"#.utf8))
        let body = #"{"index":3,"receivedAtMs":99,"payload":{"a":1}}"#
        #expect(Array(frame.prefix(4)) == [0, 0, 0, UInt8(body.utf8.count)])
        #expect(String(decoding: frame.dropFirst(4), as: UTF8.self) == body)
    }

    @Test func anOversizedLengthIsRefused() {
        var decoder = PushRelayFrame.Decoder()
        decoder.append([0x7F, 0xFF, 0xFF, 0xFF, 0x7B])
        #expect(throws: PushRelayError.self) { try decoder.next() }
    }
}

/// Values appended from any thread (a push source's callback).
final class Recorder<Value: Sendable>: Sendable {
    private let state = Mutex<[Value]>([])

    func append(_ value: Value) { state.withLock { $0.append(value) } }

    var values: [Value] { state.withLock { $0 } }
}

/// A real emulator (h2c), a real relay and real sockets over loopback.
@Suite("Push relay over loopback", .serialized, .timeLimit(.minutes(2)))
struct PushRelayLiveTests {
    static let key: ES256PrivateKey = try! ES256PrivateKey.generate()

    /// A fresh 64-digit token.
    static func token() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    /// An emulator and a provider that pushes to it, for one test; both always shut down.
    static func withEmulator(_ body: (APNsEmulator, APNsProvider) async throws -> Void) async throws {
        let emulator = APNsEmulator(configuration: APNsEmulatorConfiguration(port: 0))
        let address = try emulator.start()
        let provider = try APNsProvider(
            configuration: APNsConfiguration(
                credentials: .token(teamID: "TEAM000001", keyID: "KEY0000001", key: key),
                productionURL: "http://127.0.0.1:\(address.port)", sandboxURL: "http://127.0.0.1:\(address.port)"))
        do {
            try await body(emulator, provider)
        } catch {
            await provider.shutdown()
            await emulator.shutdown()
            throw error
        }
        await provider.shutdown()
        await emulator.shutdown()
    }

    static func push(_ provider: APNsProvider, to token: String, callID: String) async -> APNsResult {
        await provider.send(
            deviceToken: token, environment: "sandbox",
            headers: [
                ("apns-topic", "com.example.app.voip"), ("apns-push-type", "voip"), ("apns-priority", "10"),
                ("apns-expiration", "0"),
            ],
            payload: Array(#"{"aps":{},"callId":"\#(callID)"}"#.utf8))
    }

    static func callIDs(_ payloads: [Data]) -> [String] {
        payloads.compactMap { (try? JSONSerialization.jsonObject(with: $0) as? [String: Any])?["callId"] as? String }
    }

    /// Collects pushes the way `SimulatedPhone` does: following the cursor.
    final class Collector: Sendable {
        private let state = Mutex<(cursor: Int, callIDs: [String])>((0, []))

        var callIDs: [String] { state.withLock { $0.callIDs } }

        func poll(_ source: RelayedPushSource) async throws {
            let cursor = state.withLock { $0.cursor }
            let (payloads, next) = try await source.pushes(after: cursor, wait: 0.5)
            state.withLock {
                $0.cursor = next
                $0.callIDs += PushRelayLiveTests.callIDs(payloads)
            }
        }

        func collect(_ source: RelayedPushSource, until count: Int) async throws -> Bool {
            try await eventuallyTrying {
                try await poll(source)
                return callIDs.count >= count
            }
        }
    }

    @Test func aPushArrivesAsAFrameWithItsPayloadAndReceivedAt() async throws {
        try await Self.withEmulator { emulator, provider in
            let relay = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: "127.0.0.1", port: 0))
            let port = try relay.start()
            defer { relay.stop() }
            let token = Self.token()
            let delivered = Recorder<RelayedPush>()
            let source = RelayedPushSource(relay: .loopback(port: port), token: token.uppercased()) {
                delivered.append($0)
            }
            defer { source.stop() }
            try source.start()
            #expect(await eventually { source.isConnected && relay.openConnections == 1 })

            let before = Date()
            guard case .response(200, _, _) = await Self.push(provider, to: token, callID: "first") else {
                Issue.record("the emulator did not accept the push")
                return
            }
            let (payloads, cursor) = try await source.pushes(after: 0, wait: generousWait)
            #expect(Self.callIDs(payloads) == ["first"])
            #expect(cursor == 1)
            let accepted = try #require(emulator.inbox(token: token).first)
            #expect(await eventually { delivered.values.count == 1 })
            let push = try #require(delivered.values.first)
            #expect(push.index == 1)
            #expect(push.receivedAtMs == accepted.receivedAt)
            #expect(
                push.deliveredAt >= before
                    && push.deliveredAt.timeIntervalSince1970 * 1000 >= Double(accepted.receivedAt) - 1)
            // Nothing new after the cursor: an empty answer once the (short) wait passes.
            let (none, same) = try await source.pushes(after: cursor, wait: 0.05)
            #expect(none.isEmpty && same == cursor)
        }
    }

    @Test func theWireFormatIsTheDocumentedOne() async throws {
        try await Self.withEmulator { emulator, provider in
            let relay = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: "127.0.0.1", port: 0))
            let port = try relay.start()
            defer { relay.stop() }
            let token = Self.token()
            for callID in ["a", "b", "c"] { _ = await Self.push(provider, to: token, callID: callID) }
            let client = try RawClient(port: port)
            client.send("\(token) 1\n")  // resume after the first: b and c
            let (text, _) = await client.receive { text in text.contains(#""callId":"c""#) }
            let bytes = Array(text.utf8)
            let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
            let body = String(decoding: bytes[4..<(4 + length)], as: UTF8.self)
            let receivedAt = try #require(emulator.inbox(token: token).first { $0.index == 2 }).receivedAt
            #expect(body == #"{"index":2,"receivedAtMs":\#(receivedAt),"payload":{"aps":{},"callId":"b"}}"#)
            #expect(!text.contains(#""callId":"a""#), "the push at or before `after` is not sent")

            let bad = try RawClient(port: port)
            bad.send("not-a-token\n")
            #expect(await bad.receive(timeout: generousWait).closed, "a malformed line closes the connection")
        }
    }

    @Test func aReconnectResumesWithoutLossOrDuplicates() async throws {
        try await Self.withEmulator { emulator, provider in
            let first = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: "127.0.0.1", port: 0))
            let port = try first.start()
            let token = Self.token()
            let indices = Recorder<Int>()
            let source = RelayedPushSource(
                relay: .loopback(port: port), token: token, reconnectDelay: .milliseconds(20)
            ) {
                indices.append($0.index)
            }
            defer { source.stop() }
            let collector = Collector()
            for callID in ["1", "2"] { _ = await Self.push(provider, to: token, callID: callID) }
            #expect(try await collector.collect(source, until: 2))

            // The relay goes away (the connection drops); two pushes arrive meanwhile.
            first.stop()
            #expect(await eventually { !source.isConnected })
            for callID in ["3", "4"] { _ = await Self.push(provider, to: token, callID: callID) }
            try await collector.poll(source)
            let second = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: "127.0.0.1", port: port))
            try second.start()
            defer { second.stop() }
            #expect(try await collector.collect(source, until: 4))
            _ = await Self.push(provider, to: token, callID: "5")
            #expect(try await collector.collect(source, until: 5))

            #expect(collector.callIDs == ["1", "2", "3", "4", "5"])
            #expect(indices.values == [1, 2, 3, 4, 5])
            #expect(source.connections == 2)
            // The new connection asked to resume after 2: the relay sent only 3, 4 and 5.
            #expect(second.pushesRelayed == 3)
        }
    }

    @Test func stopLeavesNoThreadsOrSockets() async throws {
        try await Self.withEmulator { emulator, provider in
            let relay = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: "127.0.0.1", port: 0))
            let port = try relay.start()
            let sources = (0..<3).map { _ in RelayedPushSource(relay: .loopback(port: port), token: Self.token()) }
            for source in sources { try source.start() }
            #expect(await eventually { relay.openConnections == 3 })
            #expect(
                await eventually { Self.threads(named: "sb-push-relay") == 4 }, "the acceptor and one per connection")
            #expect(Self.threads(named: "sb-push-source") == 3)
            #expect(
                await eventually { Self.socketsOnPort(port) == 7 }, "the listener and both ends of three connections")
            _ = await Self.push(provider, to: sources[0].token, callID: "x")
            #expect(await eventually { sources[0].lastIndex == 1 })

            relay.stop()
            // The sources see the close and keep trying to reconnect until stopped.
            #expect(await eventually { sources.allSatisfy { !$0.isConnected } })
            #expect(relay.openConnections == 0)
            // Joined before stop() returned; the bound only covers the kernel's bookkeeping.
            #expect(await eventually { Self.threads(named: "sb-push-relay") == 0 })
            for source in sources { source.stop() }
            #expect(await eventually { Self.threads(named: "sb-push-source") == 0 })
            #expect(Self.socketsOnPort(port) == 0)
            await #expect(throws: PushRelayError.self) { _ = try await sources[0].pushes(after: 1, wait: 1) }
        }
    }

    /// A /proc file to its end: the kernel makes it a page at a time, and Foundation's
    /// `String(contentsOfFile:)` stops after the first (a long TCP table loses its tail).
    static func readWhole(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &scratch, scratch.count)
            if count <= 0 { break }
            bytes += scratch[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Threads of this process whose kernel name is `name`.
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines) == name
        }.count
    }

    /// This process's open TCP sockets with `port` as their local or remote port.
    static func socketsOnPort(_ port: Int) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let inodes = Set(
            descriptors.compactMap { fd -> String? in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                    target.hasPrefix("socket:[")
                else { return nil }
                return String(target.dropFirst("socket:[".count).dropLast())
            })
        let table = readWhole("/proc/self/net/tcp")
        let hexPort = String(format: "%04X", port)
        return table.split(separator: "\n").dropFirst().filter { row in
            let fields = row.split(separator: " ")
            guard fields.count > 9 else { return false }
            let ports = [fields[1], fields[2]].map { $0.split(separator: ":").last.map(String.init) ?? "" }
            return ports.contains(hexPort) && inodes.contains(String(fields[9]))
        }.count
    }
}
