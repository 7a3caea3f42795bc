import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
import SwitchboardTesting

/// A taken-over connection that echoes what it receives, closes on "bye", and records what the
/// loop told it.
// @unchecked Sendable: the only `var`, `connection`, is touched only in the HTTPConnectionHandler
// callbacks, which run one at a time on the connection's loop thread; what tests read from other
// threads (`events`, `taken`, `startedOnLoop`) is in Mutexes.
final class EchoTakeover: HTTPConnectionHandler, @unchecked Sendable {
    private var connection: HTTPTakenConnection?
    let events = Mutex<[String]>([])
    let startedOnLoop = Mutex<Bool?>(nil)

    let taken = Mutex<HTTPTakenConnection?>(nil)

    func connectionStarted(_ connection: HTTPTakenConnection) {
        self.connection = connection
        taken.withLock { $0 = connection }
        events.withLock { $0.append("started") }
        startedOnLoop.withLock { $0 = Thread.current.name?.hasPrefix("sb-http-loop-") ?? false }
    }

    func connectionReceived(_ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        events.withLock { $0.append("received \(text)") }
        connection?.send(Array("echo:".utf8) + Array(bytes))
        if text.contains("bye") { connection?.close() }
    }

    func connectionShutdownRequested() {
        events.withLock { $0.append("shutdown") }
        connection?.send(Array("going away".utf8))
        connection?.close()
    }

    func connectionClosed() {
        events.withLock { $0.append("closed") }
        connection = nil
    }

    var log: [String] { events.withLock { $0 } }
    /// The connection's unsent bytes as seen from another thread (nil before it started).
    var unsent: Int? { taken.withLock { $0?.unsentByteCount } }
}

@Suite("Taking a connection over after 101", .serialized, .timeLimit(.minutes(3)))
struct ConnectionTakeoverTests {
    static let upgradeRequest = "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"

    @Test func theHandlerGetsTheBytesSentBehindTheHeadThenEverythingElseAndWritesBack() async throws {
        let echo = EchoTakeover()
        try await withServer(handler: { _ in HTTPResponse(switchingProtocols: ["Upgrade": "echo"], to: echo) }) {
            server, port in
            let client = try RawClient(port: port)
            // The first bytes of the new protocol ride behind the request head.
            client.send(Self.upgradeRequest + "early")
            let first = await client.receive { $0.contains("echo:early") }
            #expect(first.text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
            #expect(first.text.contains("\r\nUpgrade: echo\r\n"))
            #expect(first.text.contains("\r\nConnection: Upgrade\r\n"))
            #expect(!first.text.lowercased().contains("content-length"))
            #expect(!first.text.lowercased().contains("transfer-encoding"))
            #expect(first.text.hasSuffix("\r\n\r\necho:early"))
            #expect(echo.startedOnLoop.withLock { $0 } == true)

            // Not HTTP any more: a request line is just bytes to the handler.
            client.send("GET / HTTP/1.1\r\n\r\n")
            let second = await client.receive { $0.contains("echo:GET / HTTP/1.1") }
            #expect(second.text == "echo:GET / HTTP/1.1\r\n\r\n")

            // What was written no longer counts as unsent.
            #expect(await eventually { echo.unsent == 0 })

            client.send("bye")
            let last = await client.receive { _ in false }
            #expect(last.closed)
            #expect(last.text == "echo:bye")
            #expect(await eventually { echo.log.last == "closed" })
            #expect(
                echo.log == ["started", "received early", "received GET / HTTP/1.1\r\n\r\n", "received bye", "closed"])
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aPeerThatLeavesIsReportedOnceAndLaterWritesFail() async throws {
        let echo = EchoTakeover()
        let taken = Mutex<HTTPTakenConnection?>(nil)
        final class Keeper: HTTPConnectionHandler, Sendable {
            let inner: EchoTakeover
            let taken: @Sendable (HTTPTakenConnection) -> Void
            init(inner: EchoTakeover, taken: @escaping @Sendable (HTTPTakenConnection) -> Void) {
                self.inner = inner
                self.taken = taken
            }
            func connectionStarted(_ connection: HTTPTakenConnection) {
                taken(connection)
                inner.connectionStarted(connection)
            }
            func connectionReceived(_ bytes: UnsafeRawBufferPointer) { inner.connectionReceived(bytes) }
            func connectionClosed() { inner.connectionClosed() }
        }
        let keeper = Keeper(inner: echo) { connection in taken.withLock { $0 = connection } }
        try await withServer(handler: { _ in HTTPResponse(switchingProtocols: ["Upgrade": "echo"], to: keeper) }) {
            server, port in
            do {
                let client = try RawClient(port: port)
                client.send(Self.upgradeRequest)
                _ = await client.receive { $0.contains("\r\n\r\n") }
            }
            // The client is gone (its socket closed with it).
            #expect(await eventually { echo.log.last == "closed" })
            #expect(echo.log == ["started", "closed"])
            let connection = try #require(taken.withLock { $0 })
            #expect(!connection.isOpen)
            #expect(!connection.send(Array("late".utf8)))
            await #expect(throws: HTTPStreamClosed.self) { try await connection.write(Array("late".utf8)) }
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aClientThatLeavesBeforeTheHeadIsWrittenStillClosesTheHandler() async throws {
        let echo = EchoTakeover()
        let gate = Latch()
        let arrived = Signal()
        try await withServer(handler: { _ in
            arrived.fire()
            await gate.wait()
            return HTTPResponse(switchingProtocols: ["Upgrade": "echo"], to: echo)
        }) { server, port in
            do {
                let client = try RawClient(port: port)
                client.send(Self.upgradeRequest)
                #expect(await arrived.wait())
            }
            #expect(await eventually { server.openConnectionCount == 0 })
            gate.open()
            #expect(await eventually { echo.log == ["closed"] })
        }
    }

    @Test func shutdownAsksTheHandlerToEndAndWaitsForIt() async throws {
        let echo = EchoTakeover()
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 1)
        configuration.idleTimeout = .seconds(60)
        let server = HTTPServer(configuration: configuration) { _ in
            HTTPResponse(switchingProtocols: ["Upgrade": "echo"], to: echo)
        }
        let port = try server.start().port
        let client = try RawClient(port: port)
        client.send(Self.upgradeRequest + "hello")
        _ = await client.receive { $0.contains("echo:hello") }
        await server.shutdown(gracePeriod: .seconds(30))
        let rest = await client.receive { _ in false }
        #expect(rest.closed)
        #expect(rest.text == "going away")
        #expect(echo.log == ["started", "received hello", "shutdown", "closed"])
    }

    @Test func aTakenOverConnectionIsNotClosedForIdlenessAndGetsTicks() async throws {
        final class Ticks: HTTPConnectionHandler, Sendable {
            let count = Atomic<Int>(0)
            func connectionStarted(_ connection: HTTPTakenConnection) {}
            func connectionReceived(_ bytes: UnsafeRawBufferPointer) {}
            func connectionTick(monotonicNanoseconds: UInt64) { count.wrappingAdd(1, ordering: .relaxed) }
            func connectionClosed() {}
        }
        let ticks = Ticks()
        try await withServer(
            {
                $0.idleTimeout = .milliseconds(200)
                $0.loopCount = 1
            },
            handler: { _ in
                HTTPResponse(switchingProtocols: ["Upgrade": "tick"], to: ticks)
            }
        ) { server, port in
            let client = try RawClient(port: port)
            client.send(Self.upgradeRequest)
            _ = await client.receive { $0.contains("\r\n\r\n") }
            // Idle far past the HTTP idle timeout: the sweep ticks the handler instead of closing.
            #expect(await eventually { ticks.count.load(ordering: .relaxed) >= 3 })
            #expect(server.openConnectionCount == 1)
            withExtendedLifetime(client) {}
        }
    }

    @Test func whatIsSentBeforeACloseArrivesWholeWhicheverThreadSentIt() async throws {
        final class Burst: HTTPConnectionHandler, Sendable {
            func connectionStarted(_ connection: HTTPTakenConnection) {
                // A first piece from the loop thread itself, queued before the thread below starts
                // (started first, on a busy machine it could send everything and close before it).
                connection.send(Array("start:".utf8))
                // From a thread of its own: 200 KB in pieces, then the close, with nothing between.
                Thread.detachNewThread {
                    for index in 0..<200 { connection.send([UInt8](repeating: UInt8(index % 250), count: 1000)) }
                    connection.close()
                }
            }
            func connectionReceived(_ bytes: UnsafeRawBufferPointer) {}
            func connectionClosed() {}
        }
        try await withServer(handler: { _ in HTTPResponse(switchingProtocols: ["Upgrade": "burst"], to: Burst()) }) {
            _, port in
            let client = try RawClient(port: port)
            client.send(Self.upgradeRequest)
            let all = await client.receiveBytes()
            #expect(all.closed)
            let head = try #require(all.bytes.firstRange(of: Array("\r\n\r\n".utf8)))
            let body = Array(all.bytes[head.upperBound...])
            #expect(body.count == 6 + 200_000)
            #expect(Array(body.prefix(6)) == Array("start:".utf8))
            let pieces = stride(from: 6, to: body.count, by: 1000).map { body[$0] }
            #expect(pieces == (0..<200).map { UInt8($0 % 250) })
        }
    }

    @Test func theLastBytesSurviveInputTheHandlerNeverRead() async throws {
        // The handler answers and closes on the first bytes, while the client is still sending
        // a megabyte: closing with that unread would make the kernel reset the connection and
        // could destroy the answer in flight. The loop lingers instead.
        // @unchecked Sendable: `connection` is touched only in the callbacks, which run one at a
        // time on the connection's loop thread.
        final class Abrupt: HTTPConnectionHandler, @unchecked Sendable {
            var connection: HTTPTakenConnection?
            func connectionStarted(_ connection: HTTPTakenConnection) { self.connection = connection }
            func connectionReceived(_ bytes: UnsafeRawBufferPointer) {
                connection?.send(Array("goodbye".utf8))
                connection?.close()
                connection = nil
            }
            func connectionClosed() {}
        }
        try await withServer(handler: { _ in HTTPResponse(switchingProtocols: ["Upgrade": "abrupt"], to: Abrupt()) }) {
            server, port in
            let client = try RawClient(port: port)
            client.send(Self.upgradeRequest)
            _ = await client.receive { $0.contains("\r\n\r\n") }
            let blob = [UInt8](repeating: 7, count: 1 << 20)
            let sender = Task.detached { client.send(blob) }
            let answer = await client.receive { $0.contains("goodbye") }
            #expect(answer.text.contains("goodbye"))
            await sender.value
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }
}
