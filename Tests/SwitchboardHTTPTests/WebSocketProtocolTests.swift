import Testing
@testable import SwitchboardHTTP

/// The pure WebSocket core: framing (RFC 6455 §5.7's examples), the protocol rules, the close
/// handshake and the timers, on a clock the tests set.
@Suite("WebSocket protocol", .timeLimit(.minutes(1)))
struct WebSocketProtocolTests {
    typealias Action = WebSocketProtocolMachine.Action
    static let second: UInt64 = 1_000_000_000
    static let maskKey: (UInt8, UInt8, UInt8, UInt8) = (0x37, 0xFA, 0x21, 0x3D)

    static func frames(
        _ bytes: [UInt8], role: WebSocketRole, maxFrameBytes: Int = 1 << 20, byteByByte: Bool = false
    ) -> [WebSocketFrameParser.Step] {
        var parser = WebSocketFrameParser(role: role, maxFrameBytes: maxFrameBytes)
        var steps: [WebSocketFrameParser.Step] = []
        let chunks: [[UInt8]] = byteByByte ? bytes.map { [$0] } : [bytes]
        for chunk in chunks {
            parser.append(chunk)
            while true {
                let step = parser.next()
                if step == .needMoreData { break }
                steps.append(step)
                if case .failed = step { return steps }
            }
        }
        return steps
    }

    static func server(_ limits: WebSocketLimits = WebSocketLimits()) -> WebSocketProtocolMachine {
        WebSocketProtocolMachine(role: .server, limits: limits, now: 0)
    }

    /// A client's frame, masked as a client must.
    static func masked(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
        WebSocketFrameEncoder.encode(WebSocketFrame(fin: fin, opcode: opcode, payload: payload), maskKey: maskKey)
    }

    static func close(_ code: UInt16, _ reason: String = "") -> [UInt8] {
        masked(.close, WebSocketFrameEncoder.closePayload(code: code, reason: reason))
    }

    /// The close code of a server's close frame among the actions (unmasked, so the parser of a
    /// client reads it).
    static func closeCode(in actions: [Action]) -> UInt16? {
        for case .write(let bytes) in actions {
            for case .frame(let frame) in frames(bytes, role: .client)
            where frame.opcode == .close && frame.payload.count >= 2 {
                return UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
            }
        }
        return nil
    }

    // MARK: Framing

    @Test func theRFCsExamplesParse() {
        let hello = Array("Hello".utf8)
        #expect(
            Self.frames([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], role: .client) == [
                .frame(WebSocketFrame(opcode: .text, payload: hello))
            ])
        #expect(
            Self.frames([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58], role: .server)
                == [.frame(WebSocketFrame(opcode: .text, payload: hello))])
        #expect(
            Self.frames([0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F], role: .client) == [
                .frame(WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8))),
                .frame(WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8))),
            ])
        #expect(
            Self.frames([0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], role: .client) == [
                .frame(WebSocketFrame(opcode: .ping, payload: hello))
            ])
        #expect(
            Self.frames([0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58], role: .server)
                == [.frame(WebSocketFrame(opcode: .pong, payload: hello))])
        // The encoder writes the same bytes.
        #expect(
            WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: hello)) == [
                0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F,
            ])
        #expect(
            WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: hello), maskKey: Self.maskKey)
                == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test(arguments: [0, 1, 125, 126, 127, 65535, 65536, 70000])
    func everyLengthEncodingRoundTripsWholeAndByteByByte(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let encoded = WebSocketFrameEncoder.encode(
            WebSocketFrame(opcode: .binary, payload: payload), maskKey: Self.maskKey)
        let header = length < 126 ? 2 : length <= 65535 ? 4 : 10
        #expect(encoded.count == header + 4 + length)
        if length == 256 || length == 65536 { #expect(encoded[1] & 0x7F == (length == 256 ? 126 : 127)) }
        for byteByByte in [false, true] where !(byteByByte && length > 70000) {
            let steps = Self.frames(encoded, role: .server, byteByByte: byteByByte)
            #expect(steps.count == 1)
            if case .frame(let frame) = steps.first {
                #expect(frame.payload.count == length)
                #expect(frame.payload == payload)
            } else {
                Issue.record("not a frame: \(steps)")
            }
        }
    }

    @Test func severalFramesInOneReadComeOutInOrder() {
        let bytes = Self.masked(.text, Array("a".utf8)) + Self.masked(.ping, [1, 2]) + Self.masked(.binary, [9])
        #expect(Self.frames(bytes, role: .server).count == 3)
    }

    @Test(
        arguments: [
            ("unmasked from a client", [0x81, 0x01, 0x41], WebSocketCloseCode.protocolError),
            ("reserved bit 1", [0xC1, 0x81, 0, 0, 0, 0, 0x41], WebSocketCloseCode.protocolError),
            ("reserved bit 3", [0x91, 0x81, 0, 0, 0, 0, 0x41], WebSocketCloseCode.protocolError),
            ("opcode 3", [0x83, 0x80, 0, 0, 0, 0], WebSocketCloseCode.protocolError),
            ("opcode 11", [0x8B, 0x80, 0, 0, 0, 0], WebSocketCloseCode.protocolError),
            ("fragmented ping", [0x09, 0x80, 0, 0, 0, 0], WebSocketCloseCode.protocolError),
            ("ping of 126 bytes", [0x89, 0xFE, 0, 126], WebSocketCloseCode.protocolError),
            (
                "64-bit length with its top bit", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1],
                WebSocketCloseCode.protocolError
            ),
            ("frame over the limit", [0x82, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 1], WebSocketCloseCode.messageTooBig),
        ] as [(String, [UInt8], UInt16)])
    func malformedFramesFailWithTheirCode(name: String, bytes: [UInt8], code: UInt16) {
        let steps = Self.frames(bytes, role: .server)
        guard case .failed(let failure) = steps.last else {
            Issue.record("\(name): no failure: \(steps)")
            return
        }
        #expect(failure.code == code, "\(name)")
        // A failed parser stays failed.
        var parser = WebSocketFrameParser(role: .server, maxFrameBytes: 1 << 20)
        parser.append(bytes)
        _ = parser.next()
        parser.append(Self.masked(.text, [0x41]))
        #expect(parser.next() == .failed(failure))
    }

    @Test func aServersMaskedFrameIsRefusedByAClient() {
        guard case .failed(let failure) = Self.frames(Self.masked(.text, [0x41]), role: .client).last else {
            Issue.record("accepted")
            return
        }
        #expect(failure.code == WebSocketCloseCode.protocolError)
    }

    @Test func aLongCloseReasonIsCutWithoutBreakingACharacter() {
        for prefix in 0..<4 {
            let reason = String(repeating: "x", count: prefix) + String(repeating: "é€😀", count: 40)
            let payload = WebSocketFrameEncoder.closePayload(code: 1000, reason: reason)
            #expect(payload.count <= 125)
            #expect(payload.count >= 121)
            #expect(String(validating: payload[2...], as: UTF8.self) != nil)
        }
        #expect(WebSocketFrameEncoder.closePayload(code: 4000, reason: "ok") == [0x0F, 0xA0, 0x6F, 0x6B])
    }

    // MARK: Messages and control frames

    @Test func messagesArriveWholeAcrossFragmentsWithControlFramesBetween() {
        var machine = Self.server()
        let bytes =
            Self.masked(.text, Array("Hel".utf8), fin: false) + Self.masked(.ping, [7])
            + Self.masked(.continuation, Array("lo ".utf8), fin: false)
            + Self.masked(.continuation, Array("wörld".utf8))
            + Self.masked(.binary, [1, 2, 3])
        let actions = machine.receive(bytes, now: 1)
        #expect(
            actions == [
                .write(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .pong, payload: [7]))),
                .deliver(.text("Hello wörld")),
                .deliver(.binary([1, 2, 3])),
            ])
        #expect(machine.isOpen)
    }

    @Test(
        arguments: [
            ("continuation without a message", masked(.continuation, [0x41]), WebSocketCloseCode.protocolError),
            (
                "a new message mid-fragments", masked(.text, [0x41], fin: false) + masked(.binary, [1]),
                WebSocketCloseCode.protocolError
            ),
            ("text that is not UTF-8", masked(.text, [0xC3, 0x28]), WebSocketCloseCode.invalidPayload),
            (
                "fragmented text not UTF-8", masked(.text, [0xE2, 0x82], fin: false) + masked(.continuation, [0x41]),
                WebSocketCloseCode.invalidPayload
            ),
            (
                "a message over the limit in fragments",
                masked(.binary, [UInt8](repeating: 1, count: 900), fin: false)
                    + masked(.continuation, [UInt8](repeating: 1, count: 900)), WebSocketCloseCode.messageTooBig
            ),
            ("a close with one byte", masked(.close, [3]), WebSocketCloseCode.protocolError),
            ("close code 1005", close(1005), WebSocketCloseCode.protocolError),
            ("close code 1006", close(1006), WebSocketCloseCode.protocolError),
            ("close code 1004", close(1004), WebSocketCloseCode.protocolError),
            ("close code 999", close(999), WebSocketCloseCode.protocolError),
            ("close code 2999", close(2999), WebSocketCloseCode.protocolError),
            ("close code 5000", close(5000), WebSocketCloseCode.protocolError),
            ("close code 1015", close(1015), WebSocketCloseCode.protocolError),
            ("a close reason not UTF-8", masked(.close, [0x03, 0xE8, 0xFF]), WebSocketCloseCode.invalidPayload),
        ] as [(String, [UInt8], UInt16)])
    func protocolViolationsFailTheConnectionWithTheirCode(name: String, bytes: [UInt8], code: UInt16) {
        var machine = Self.server(WebSocketLimits(maxFrameBytes: 1000, maxMessageBytes: 1500))
        let actions = machine.receive(bytes, now: 1)
        #expect(Self.closeCode(in: actions) == code, "\(name)")
        #expect(actions.last == .closeTransport, "\(name)")
        #expect(machine.isClosed)
        #expect(
            machine.closeInfo
                == WebSocketCloseInfo(code: code, reason: machine.closeInfo?.reason ?? "", initiatedByPeer: false))
        // Nothing after a failure is read or answered.
        #expect(machine.receive(Self.masked(.ping, [1]), now: 2) == [])
        #expect(machine.frame(for: .text("late")) == nil)
    }

    @Test(arguments: [1000, 1001, 1003, 1007, 1011, 1012, 1013, 1014, 3000, 4999] as [UInt16])
    func aPeersCloseIsEchoedAndEndsTheConnection(code: UInt16) {
        var machine = Self.server()
        let actions = machine.receive(Self.close(code, "bye"), now: 1)
        #expect(
            actions == [
                .write(
                    WebSocketFrameEncoder.encode(
                        WebSocketFrame(opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)]))),
                .closeTransport,
            ])
        #expect(machine.closeInfo == WebSocketCloseInfo(code: code, reason: "bye", initiatedByPeer: true))
        #expect(!machine.isOpen)
    }

    @Test func aCloseWithoutACodeIsAnsweredEmptyAndReportedAs1005() {
        var machine = Self.server()
        let actions = machine.receive(Self.masked(.close, []), now: 1)
        #expect(actions == [.write([0x88, 0x00]), .closeTransport])
        #expect(machine.closeInfo?.code == 1005)
    }

    @Test func ourCloseWaitsForThePeersThenEnds() {
        var machine = Self.server()
        let actions = machine.close(code: 4001, reason: "call ended", now: 10)
        #expect(Self.closeCode(in: actions) == 4001)
        #expect(!machine.isOpen && !machine.isClosed)
        #expect(machine.frame(for: .binary([1])) == nil)
        // Data the peer sent before it saw our close is dropped, a ping still answered; its
        // close ends the connection.
        #expect(machine.receive(Self.masked(.binary, [1]), now: 11) == [])
        #expect(
            machine.receive(Self.masked(.ping, [5]), now: 11) == [
                .write(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .pong, payload: [5])))
            ])
        #expect(machine.receive(Self.close(4001), now: 12) == [.closeTransport])
        #expect(machine.isClosed)
        #expect(machine.closeInfo == WebSocketCloseInfo(code: 4001, reason: "call ended", initiatedByPeer: false))
        #expect(machine.close(code: 1000, reason: "", now: 13) == [])
    }

    @Test func aPeerThatNeverAnswersOurCloseIsDroppedAtTheTimeout() {
        var machine = Self.server(WebSocketLimits(closeTimeout: .seconds(5)))
        _ = machine.close(code: 1000, reason: "", now: 0)
        #expect(machine.tick(now: 4 * Self.second) == [])
        #expect(machine.tick(now: 5 * Self.second) == [.closeTransport])
        #expect(machine.tick(now: 6 * Self.second) == [])
    }

    @Test func anInvalidCodeOfOursBecomes1011() {
        var machine = Self.server()
        #expect(Self.closeCode(in: machine.close(code: 1005, reason: "", now: 0)) == 1011)
    }

    @Test func silenceBringsOnePingPerIntervalThenTheIdleClose() {
        var machine = Self.server(WebSocketLimits(pingInterval: .seconds(20), idleTimeout: .seconds(60)))
        let ping = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .ping, payload: []))
        #expect(machine.tick(now: 19 * Self.second) == [])
        #expect(machine.tick(now: 20 * Self.second) == [.write(ping)])
        #expect(machine.tick(now: 21 * Self.second) == [])
        #expect(machine.tick(now: 40 * Self.second) == [.write(ping)])
        // Anything from the peer (a pong) restarts the silence.
        _ = machine.receive(Self.masked(.pong, []), now: 41 * Self.second)
        #expect(machine.tick(now: 60 * Self.second) == [])
        #expect(machine.tick(now: 61 * Self.second) == [.write(ping)])
        let idle = machine.tick(now: 101 * Self.second)
        #expect(Self.closeCode(in: idle) == WebSocketCloseCode.goingAway)
        #expect(idle.last == .closeTransport)
        #expect(machine.closeInfo?.reason == "idle timeout")
    }

    @Test func aTransportGoneWithoutACloseIs1006() {
        let machine = Self.server()
        #expect(machine.closeInfo(transportClosed: false) == nil)
        #expect(
            machine.closeInfo(transportClosed: true)
                == WebSocketCloseInfo(code: 1006, reason: "", initiatedByPeer: true))
    }

    @Test func aClientMasksWhatItSendsAndReadsUnmaskedFrames() {
        var client = WebSocketProtocolMachine(
            role: .client, limits: WebSocketLimits(), now: 0, maskKeys: { Self.maskKey })
        let frame = client.frame(for: .text("Hello"))
        #expect(frame == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        #expect(client.receive([0x82, 0x02, 5, 6], now: 1) == [.deliver(.binary([5, 6]))])
        // A ping from the server is answered with a masked pong.
        let pong = client.receive([0x89, 0x01, 0x41], now: 2)
        #expect(
            pong == [
                .write(
                    WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .pong, payload: [0x41]), maskKey: Self.maskKey))
            ])
    }

    @Test func theHandshakeAcceptsTheRFCsKey() throws {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let request = HTTPRequest(
            method: "GET", target: "/chat",
            headers: [
                "Host": "server.example.com", "Upgrade": "websocket", "Connection": "keep-alive, Upgrade",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
            ])
        let headers = try WebSocketHandshake.validate(request)
        #expect(headers["Sec-WebSocket-Accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(headers["Upgrade"] == "websocket")
    }

    @Test(
        arguments: [
            (
                "no upgrade",
                [
                    "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                    "Sec-WebSocket-Version": "13",
                ], 426, "WEBSOCKET_UPGRADE_REQUIRED"
            ),
            (
                "no connection upgrade",
                [
                    "Upgrade": "websocket", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                    "Sec-WebSocket-Version": "13",
                ], 400, "WEBSOCKET_BAD_HANDSHAKE"
            ),
            (
                "version 8",
                [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                    "Sec-WebSocket-Version": "8",
                ], 426, "WEBSOCKET_VERSION_UNSUPPORTED"
            ),
            (
                "no key", ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13"], 400,
                "WEBSOCKET_BAD_HANDSHAKE"
            ),
            (
                "short key",
                [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "c2hvcnQ=",
                    "Sec-WebSocket-Version": "13",
                ], 400, "WEBSOCKET_BAD_HANDSHAKE"
            ),
            (
                "key not base64",
                [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "!!!!!!!!!!!!!!!!!!!!!!==",
                    "Sec-WebSocket-Version": "13",
                ], 400, "WEBSOCKET_BAD_HANDSHAKE"
            ),
        ] as [(String, [String: String], Int, String)])
    func aBadHandshakeIsRefusedWithItsCode(name: String, fields: [String: String], status: Int, code: String) {
        let request = HTTPRequest(
            method: "GET", target: "/chat", headers: HTTPHeaders(fields.map { ($0.key, $0.value) }))
        #expect(throws: WebSocketHandshakeError.self, "\(name)") { try WebSocketHandshake.validate(request) }
        do {
            _ = try WebSocketHandshake.validate(request)
        } catch {
            #expect(error.status == status, "\(name)")
            #expect(error.code == code, "\(name)")
        }
    }

    @Test func aPostIsNotAHandshake() {
        let request = HTTPRequest(
            method: "POST", target: "/chat",
            headers: [
                "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Version": "13",
            ])
        #expect(throws: WebSocketHandshakeError.self) { try WebSocketHandshake.validate(request) }
    }
}
