// libFuzzer target for the HTTP/1.1 request parser, compiled by scripts/fuzz.sh together with
// Sources/SwitchboardHTTP/Parsing/*.swift. Beyond "no crash, no hang", it checks that feeding
// the same bytes at once or in small pieces yields exactly the same steps, and that no request
// it accepts breaks the configured limits.

let limits = HTTPParserLimits(maxHeaderBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 4096)

func steps(of input: [UInt8], pieceSize: Int) -> [HTTPParseStep] {
    var parser = HTTPRequestParser(limits: limits)
    var result: [HTTPParseStep] = []
    var offset = 0
    while offset < input.count {
        let end = min(input.count, offset + pieceSize)
        parser.append(input[offset..<end])
        offset = end
        // Each call either makes progress or asks for more; bound it to catch a livelock.
        for _ in 0..<(input.count + 16) {
            let step = parser.next()
            if step == .needMoreData { break }
            result.append(step)
            if case .failed = step { return result }
        }
    }
    return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = steps(of: input, pieceSize: max(1, input.count))
    let pieces = steps(of: input, pieceSize: 1 + Int(input.first ?? 0) % 7)
    precondition(whole == pieces, "parser result depends on how the bytes were split")
    for step in whole {
        if case .request(let head, let body) = step {
            precondition(body.count <= limits.maxBodyBytes, "body over the limit accepted")
            precondition(head.headers.count <= limits.maxHeaderCount, "too many headers accepted")
            if case .length(let length) = head.framing { precondition(body.count == length, "body length mismatch") }
            precondition(head.path.hasPrefix("/") || head.path == "*", "path without a leading slash")
        }
    }
    return 0
}
