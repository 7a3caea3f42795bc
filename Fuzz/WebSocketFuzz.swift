// libFuzzer target for the WebSocket frame parser and protocol machine, compiled by
// scripts/fuzz.sh together with Sources/SwitchboardHTTP/WebSocket/WebSocketFrameParser.swift and
// WebSocketProtocol.swift. Beyond "no crash, no hang", it checks that the same bytes fed at once
// or in small pieces give the same actions, that nothing over the limits is delivered, that text
// delivered is UTF-8, and that nothing at all is done once the connection is over.

let limits = WebSocketLimits(maxFrameBytes: 512, maxMessageBytes: 1024)

func actions(of input: [UInt8], pieceSize: Int) -> [WebSocketProtocolMachine.Action] {
    var machine = WebSocketProtocolMachine(role: .server, limits: limits, now: 0)
    var result: [WebSocketProtocolMachine.Action] = []
    var offset = 0
    var time: UInt64 = 0
    while offset < input.count {
        let end = min(input.count, offset + pieceSize)
        let wasClosed = machine.isClosed
        let step = machine.receive(Array(input[offset..<end]), now: time)
        precondition(!wasClosed || step.isEmpty, "acted after the connection was over")
        result += step
        offset = end
        time += 1
    }
    return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = actions(of: input, pieceSize: max(1, input.count))
    let pieces = actions(of: input, pieceSize: 1 + Int(input.first ?? 0) % 7)
    precondition(whole == pieces, "protocol result depends on how the bytes were split")
    var closing = false
    for action in whole {
        switch action {
        case .deliver(.binary(let bytes)):
            precondition(!closing, "a message delivered after the end")
            precondition(bytes.count <= limits.maxMessageBytes, "message over the limit delivered")
        case .deliver(.text(let text)):
            precondition(!closing, "a message delivered after the end")
            precondition(text.utf8.count <= limits.maxMessageBytes, "message over the limit delivered")
        case .write(let bytes):
            precondition(!closing, "written after the end")
            // What a server writes is unmasked and parses back.
            var parser = WebSocketFrameParser(role: .client, maxFrameBytes: 1 << 20)
            parser.append(bytes)
            guard case .frame = parser.next() else { preconditionFailure("wrote a frame that does not parse") }
        case .closeTransport:
            closing = true
        }
    }
    return 0
}
