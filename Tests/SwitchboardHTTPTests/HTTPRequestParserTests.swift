import Testing
@testable import SwitchboardHTTP

/// Feeds `text` to a fresh parser and collects every step until it needs more data or fails.
private func parse(
    _ text: String, limits: HTTPParserLimits = HTTPParserLimits(), pieceSize: Int? = nil
) -> [HTTPParseStep] {
    var parser = HTTPRequestParser(limits: limits)
    let bytes = Array(text.utf8)
    var steps: [HTTPParseStep] = []
    var offset = 0
    let size = pieceSize ?? max(bytes.count, 1)
    repeat {
        let end = min(bytes.count, offset + size)
        parser.append(bytes[offset..<end])
        offset = end
        while true {
            let step = parser.next()
            if step == .needMoreData { break }
            steps.append(step)
            if case .failed = step { return steps }
        }
    } while offset < bytes.count
    return steps
}

private func requests(_ steps: [HTTPParseStep]) -> [(HTTPRequestHead, String)] {
    steps.compactMap { step in
        if case .request(let head, let body) = step { return (head, String(decoding: body, as: UTF8.self)) }
        return nil
    }
}

private func failure(_ steps: [HTTPParseStep]) -> HTTPParseError? {
    if case .failed(let error) = steps.last { return error }
    return nil
}

struct MalformedInput: Sendable, CustomTestStringConvertible {
    let name: String
    let raw: String
    let error: HTTPParseError
    var testDescription: String { name }
}

@Suite("HTTP request parser", .timeLimit(.minutes(3)))
struct HTTPRequestParserTests {
    @Test func simpleGet() {
        let parsed = requests(
            parse("GET /calls/abc?after=5&wait=20 HTTP/1.1\r\nHost: example\r\nX-A:  padded value \t\r\n\r\n"))
        #expect(parsed.count == 1)
        let head = parsed[0].0
        #expect(head.method == "GET")
        #expect(head.path == "/calls/abc")
        #expect(head.query == "after=5&wait=20")
        #expect(head.version == .http1_1)
        #expect(head.keepAlive)
        #expect(head.headers["x-a"] == "padded value")
        #expect(head.framing == .none)
    }

    @Test func contentLengthBody() {
        let parsed = requests(parse("POST /m HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world"))
        #expect(parsed.map(\.1) == ["hello world"])
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() {
        let raw =
            "POST /m HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n"
        let parsed = requests(parse(raw))
        #expect(parsed.map(\.1) == ["hello 0123456789"])
        #expect(parsed.first?.0.framing == .chunked)
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let raw =
            "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /3 HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(requests(parse(raw)).map(\.0.path) == ["/1", "/2", "/3"])
    }

    @Test(arguments: [1, 2, 3, 5, 7, 13])
    func requestSplitAcrossManyReads(pieceSize: Int) {
        let raw =
            "POST /split?q=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
            + "GET /next HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nwxyz"
        let whole = parse(raw)
        let pieces = parse(raw, pieceSize: pieceSize)
        #expect(pieces == whole)
        #expect(requests(pieces).map(\.1) == ["abcde", "wxyz"])
    }

    @Test func headReceivedComesBeforeTheBody() {
        var parser = HTTPRequestParser()
        parser.append(Array("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n".utf8))
        guard case .headReceived(let head) = parser.next() else {
            Issue.record("expected the head before the body")
            return
        }
        #expect(head.expectsContinue)
        #expect(parser.next() == .needMoreData)
        parser.append(Array("abc".utf8))
        #expect(requests([parser.next()]).map(\.1) == ["abc"])
    }

    @Test func keepAliveRules() {
        #expect(requests(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).first?.0.keepAlive == false)
        #expect(
            requests(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, Upgrade\r\n\r\n")).first?.0.keepAlive
                == true)
        #expect(requests(parse("GET / HTTP/1.0\r\n\r\n")).first?.0.keepAlive == false)
        #expect(requests(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).first?.0.keepAlive == true)
    }

    @Test func requestTargetForms() {
        #expect(
            requests(parse("GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: example.com\r\n\r\n")).first?.0.path
                == "/a/b")
        #expect(requests(parse("GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n")).first?.0.path == "/")
        #expect(requests(parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")).first?.0.path == "*")
        #expect(
            requests(parse("\r\n\r\nGET /after-empty-lines HTTP/1.1\r\nHost: a\r\n\r\n")).first?.0.path
                == "/after-empty-lines")
    }

    static let malformed: [MalformedInput] = [
        .init(name: "no version", raw: "GET /\r\nHost: a\r\n\r\n", error: .malformedRequestLine),
        .init(name: "two spaces", raw: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", error: .malformedRequestLine),
        .init(name: "extra token", raw: "GET / HTTP/1.1 x\r\nHost: a\r\n\r\n", error: .malformedRequestLine),
        .init(name: "lowercase version", raw: "GET / http/1.1\r\nHost: a\r\n\r\n", error: .malformedRequestLine),
        .init(name: "HTTP/2.0", raw: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", error: .unsupportedVersion),
        .init(name: "HTTP/1.2", raw: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", error: .unsupportedVersion),
        .init(name: "bad method char", raw: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", error: .invalidMethod),
        .init(name: "relative target", raw: "GET calls HTTP/1.1\r\nHost: a\r\n\r\n", error: .invalidTarget),
        .init(name: "asterisk with GET", raw: "GET * HTTP/1.1\r\nHost: a\r\n\r\n", error: .invalidTarget),
        .init(name: "fragment in target", raw: "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", error: .invalidTarget),
        .init(name: "control byte in target", raw: "GET /a\u{7f} HTTP/1.1\r\nHost: a\r\n\r\n", error: .invalidTarget),
        .init(name: "bare LF request line", raw: "GET / HTTP/1.1\nHost: a\r\n\r\n", error: .bareLineFeed),
        .init(name: "bare LF header", raw: "GET / HTTP/1.1\r\nHost: a\n\r\n", error: .bareLineFeed),
        .init(name: "bare CR", raw: "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", error: .bareLineFeed),
        .init(name: "space before colon", raw: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", error: .malformedHeader),
        .init(name: "no colon", raw: "GET / HTTP/1.1\r\nHost a\r\n\r\n", error: .malformedHeader),
        .init(name: "empty name", raw: "GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", error: .malformedHeader),
        .init(name: "NUL in value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n", error: .malformedHeader),
        .init(name: "obs-fold", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", error: .obsoleteLineFolding),
        .init(name: "missing Host", raw: "GET / HTTP/1.1\r\nX: a\r\n\r\n", error: .missingHost),
        .init(name: "two Host", raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", error: .multipleHost),
        .init(
            name: "duplicate Content-Length",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
            error: .conflictingContentLength),
        .init(
            name: "conflicting Content-Length",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            error: .conflictingContentLength),
        .init(
            name: "list Content-Length", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc",
            error: .invalidContentLength),
        .init(
            name: "negative Content-Length", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
            error: .invalidContentLength),
        .init(
            name: "signed Content-Length", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc",
            error: .invalidContentLength),
        .init(
            name: "hex Content-Length", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\nabc",
            error: .invalidContentLength),
        .init(
            name: "huge Content-Length",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
            error: .invalidContentLength),
        .init(
            name: "TE and CL",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            error: .conflictingFraming),
        .init(
            name: "chunked in 1.0", raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            error: .conflictingFraming),
        .init(
            name: "gzip TE", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            error: .unsupportedTransferEncoding),
        .init(
            name: "two TE",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            error: .unsupportedTransferEncoding),
        .init(
            name: "chunk size not hex", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            error: .invalidChunk),
        .init(
            name: "chunk size empty", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
            error: .invalidChunk),
        .init(
            name: "chunk size negative", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
            error: .invalidChunk),
        .init(
            name: "chunk size overflow",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n",
            error: .invalidChunk),
        .init(
            name: "chunk data too long",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            error: .invalidChunk),
        .init(
            name: "chunk bare LF", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n",
            error: .invalidChunk),
        .init(
            name: "unknown expectation",
            raw: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\na",
            error: .unsupportedExpectation),
        .init(
            name: "too many empty lines",
            raw: String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\nHost: a\r\n\r\n", error: .malformedRequestLine
        ),
    ]

    @Test(arguments: malformed)
    func malformedInputIsRejected(_ input: MalformedInput) {
        #expect(failure(parse(input.raw)) == input.error)
        // Byte by byte gives the same verdict.
        #expect(failure(parse(input.raw, pieceSize: 1)) == input.error)
    }

    @Test func oversizedHeadIs431EvenWithoutATerminator() {
        let limits = HTTPParserLimits(maxHeaderBytes: 1024)
        let endless = "GET / HTTP/1.1\r\nHost: a\r\nX-Fill: " + String(repeating: "a", count: 2000)
        let error = failure(parse(endless, limits: limits))
        #expect(error == .headerTooLarge)
        #expect(error?.status == 431)
        // The limit counts the whole head, final empty line included: 1,024 bytes pass, 1,025 do not.
        func head(totalBytes: Int) -> String {
            let fixed = "GET / HTTP/1.1\r\nHost: a\r\nX: \r\n\r\n".utf8.count
            return "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: totalBytes - fixed) + "\r\n\r\n"
        }
        #expect(head(totalBytes: 1024).utf8.count == 1024)
        #expect(requests(parse(head(totalBytes: 1024), limits: limits)).count == 1)
        #expect(failure(parse(head(totalBytes: 1025), limits: limits)) == .headerTooLarge)
        #expect(failure(parse(head(totalBytes: 1025), limits: limits, pieceSize: 3)) == .headerTooLarge)
    }

    /// Found by the fuzz smoke: a trailer line one or two bytes over its budget, with a bad byte
    /// in it, was `malformedHeader` when the bytes came at once and `headerTooLarge` when they came
    /// one by one. Around each line limit the verdict must not depend on how the bytes are split.
    @Test(arguments: [1, 2, 3, 7])
    func lineLimitsGiveTheSameVerdictHoweverTheBytesAreSplit(pieceSize: Int) {
        let limits = HTTPParserLimits(maxHeaderBytes: 64)
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
        // A trailer line and its CRLF must fit in the 64 bytes: "X: " + 59 bytes fits exactly.
        for fill in 55...66 {
            for value in [String(repeating: "v", count: fill), String(repeating: "v", count: fill - 1) + "\u{7F}"] {
                let text = head + "X: " + value + "\r\n\r\n"
                let whole = parse(text, limits: limits)
                let split = parse(text, limits: limits, pieceSize: pieceSize)
                #expect(failure(whole) == failure(split), "fill \(fill)")
                #expect(requests(whole).count == requests(split).count, "fill \(fill)")
                if fill <= 59, !value.hasSuffix("\u{7F}") { #expect(requests(whole).count == 1, "fill \(fill)") }
                if fill > 59 { #expect(failure(whole) == .headerTooLarge, "fill \(fill)") }
            }
        }
        // A chunk-size line may have 4,096 bytes (extensions included), not one more.
        for extra in [4094, 4095, 4096] {
            let text =
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;"
                + String(repeating: "e", count: extra)
                + "\r\nx\r\n0\r\n\r\n"
            let whole = parse(text)
            #expect(failure(whole) == failure(parse(text, pieceSize: pieceSize)), "extension \(extra)")
            #expect(failure(whole) == (extra + 2 > 4096 ? .invalidChunk : nil), "extension \(extra)")
        }
    }

    @Test func tooManyHeaders() {
        let limits = HTTPParserLimits(maxHeaderCount: 5)
        let five = (1...4).map { "X-\($0): v\r\n" }.joined()
        #expect(requests(parse("GET / HTTP/1.1\r\nHost: a\r\n\(five)\r\n", limits: limits)).count == 1)
        #expect(failure(parse("GET / HTTP/1.1\r\nHost: a\r\n\(five)X-5: v\r\n\r\n", limits: limits)) == .tooManyHeaders)
    }

    @Test func bodyLimitAppliesBeforeTheBodyArrives() {
        let limits = HTTPParserLimits(maxBodyBytes: 10)
        #expect(
            requests(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits)).count
                == 1)
        let steps = parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", limits: limits)
        #expect(failure(steps) == .bodyTooLarge)
        #expect(HTTPParseError.bodyTooLarge.status == 413)
    }

    @Test func chunkedBodyLimitCountsDecodedBytes() {
        let limits = HTTPParserLimits(maxBodyBytes: 8)
        let fits = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n"
        #expect(requests(parse(fits, limits: limits)).map(\.1) == ["abcdefgh"])
        let over = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n5\r\n"
        #expect(failure(parse(over, limits: limits)) == .bodyTooLarge)
    }

    @Test func errorsMapToStatusesAndCodes() {
        #expect(HTTPParseError.malformedHeader.status == 400)
        #expect(HTTPParseError.malformedHeader.code == "BAD_REQUEST")
        #expect(HTTPParseError.tooManyHeaders.code == "HEADERS_TOO_LARGE")
        #expect(HTTPParseError.unsupportedVersion.status == 505)
        #expect(HTTPParseError.unsupportedTransferEncoding.status == 501)
        #expect(HTTPParseError.unsupportedExpectation.status == 417)
    }

    @Test func afterAFailureTheParserStaysFailed() {
        var parser = HTTPRequestParser()
        parser.append(Array("BAD\r\n\r\n".utf8))
        #expect(parser.next() == .failed(.malformedRequestLine))
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(parser.next() == .failed(.malformedRequestLine))
    }

    @Test func idleParserReleasesItsBuffer() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(requests([parser.next()]).count == 1)
        #expect(parser.isIdle)
        parser.releaseMemoryIfIdle()
        #expect(parser.bufferedByteCount == 0)
        parser.append(Array("GET /again HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(requests([parser.next()]).first?.0.path == "/again")
    }
}
