// A strict, incremental HTTP/1.1 request parser. Pure: bytes in, steps out; stdlib only.

/// What the parser found after the latest bytes.
public enum HTTPParseStep: Sendable, Equatable {
    /// Nothing complete yet; feed more bytes.
    case needMoreData
    /// A request head was parsed and a body follows (reported once, before the body, so the
    /// server can answer `Expect: 100-continue`).
    case headReceived(HTTPRequestHead)
    /// A whole request: its head and its de-chunked body.
    case request(HTTPRequestHead, body: [UInt8])
    /// The input is not acceptable; the connection must answer and close.
    case failed(HTTPParseError)
}

/// Parses a stream of requests on one connection, one at a time, in order.
///
/// ```swift
/// var parser = HTTPRequestParser()
/// parser.append(bytes)
/// while case .request(let head, let body) = parser.next() { ... }
/// ```
public struct HTTPRequestParser: Sendable {
    private enum State: Sendable {
        case head
        /// The head was reported; the body's limit (``bodyLimit``) is applied at the next step.
        case admission(HTTPRequestHead)
        case lengthBody(HTTPRequestHead, remaining: Int)
        case chunkSize(HTTPRequestHead)
        case chunkData(HTTPRequestHead, remaining: Int)
        case chunkDataEnd(HTTPRequestHead)
        case trailers(HTTPRequestHead, bytes: Int, count: Int)
        case failed(HTTPParseError)
    }

    /// The limits in force.
    public let limits: HTTPParserLimits
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0
    private var state = State.head
    private var body: [UInt8] = []
    private var leadingEmptyLines = 0

    /// The most body bytes the current request may carry: ``HTTPParserLimits/maxBodyBytes``
    /// unless lowered after `.headReceived` (a route that takes small bodies); a larger body
    /// fails with `.bodyTooLarge` before any of it is kept.
    public var bodyLimit: Int

    /// The most empty lines tolerated before a request line (RFC 9112 §2.2 allows some).
    static let maxLeadingEmptyLines = 8
    /// The most body bytes reserved before they arrive.
    static let initialBodyCapacity = 64 * 1024
    /// The most bytes a chunk-size line (with extensions) may take.
    static let maxChunkLineBytes = 4096

    /// Creates a parser with the given limits.
    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
        bodyLimit = limits.maxBodyBytes
    }

    /// Bytes received but not yet consumed by a complete request.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Whether the parser is between requests with nothing buffered.
    public var isIdle: Bool {
        if case .head = state { return bufferedByteCount == 0 }
        return false
    }

    /// Whether some bytes of a request that is not complete yet have arrived.
    public var hasPartialRequest: Bool { !isIdle }

    /// Whether the head of the current request is complete and its body is being read.
    public var isReadingBody: Bool {
        switch state {
        case .admission, .lengthBody, .chunkSize, .chunkData, .chunkDataEnd, .trailers: true
        case .head, .failed: false
        }
    }

    /// Frees the buffer of an idle connection, so a held keep-alive connection costs little.
    public mutating func releaseMemoryIfIdle() {
        guard case .head = state, start == buffer.count else { return }
        buffer = []
        start = 0
        scanned = 0
    }

    /// Hands over the bytes buffered after the last complete request and empties the buffer:
    /// a connection that switched protocols gives them to its new owner.
    public mutating func takeBufferedBytes() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer = []
        start = 0
        scanned = 0
        return rest
    }

    /// Appends received bytes.
    public mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Advances as far as the buffered bytes allow and reports the next step.
    public mutating func next() -> HTTPParseStep {
        while true {
            switch state {
            case .failed(let error):
                return .failed(error)
            case .head:
                switch parseHead() {
                case .none:
                    return .needMoreData
                case .failure(let error):
                    return fail(error)
                case .success(let head):
                    body = []
                    bodyLimit = limits.maxBodyBytes
                    switch head.framing {
                    case .none:
                        return .request(head, body: [])
                    case .length(let length):
                        if length > limits.maxBodyBytes { return fail(.bodyTooLarge) }
                    case .chunked:
                        break
                    }
                    state = .admission(head)
                    return .headReceived(head)
                }
            case .admission(let head):
                switch head.framing {
                case .none:
                    return finish(head)
                case .length(let length):
                    if length > bodyLimit { return fail(.bodyTooLarge) }
                    state = .lengthBody(head, remaining: length)
                    // Memory for what has arrived, not for what is announced.
                    body.reserveCapacity(min(length, Self.initialBodyCapacity))
                case .chunked:
                    state = .chunkSize(head)
                }
            case .lengthBody(let head, let remaining):
                let take = min(remaining, bufferedByteCount)
                body.append(contentsOf: buffer[start..<(start + take)])
                start += take
                if take == remaining { return finish(head) }
                state = .lengthBody(head, remaining: remaining - take)
                return .needMoreData
            case .chunkSize(let head):
                let lineEnd: Int
                switch findLineEnd(from: start, maxLineBytes: Self.maxChunkLineBytes) {
                case .found(let index): lineEnd = index
                case .needMoreData: return .needMoreData
                case .tooLong, .bareCROrLF: return fail(.invalidChunk)
                }
                guard let size = Self.parseChunkSize(buffer[start..<lineEnd]) else { return fail(.invalidChunk) }
                start = lineEnd + 2
                if size == 0 {
                    state = .trailers(head, bytes: 0, count: 0)
                } else {
                    if size > bodyLimit - body.count { return fail(.bodyTooLarge) }
                    state = .chunkData(head, remaining: size)
                }
            case .chunkData(let head, let remaining):
                let take = min(remaining, bufferedByteCount)
                body.append(contentsOf: buffer[start..<(start + take)])
                start += take
                if take < remaining {
                    state = .chunkData(head, remaining: remaining - take)
                    return .needMoreData
                }
                state = .chunkDataEnd(head)
            case .chunkDataEnd(let head):
                guard bufferedByteCount >= 2 else { return .needMoreData }
                guard buffer[start] == 13, buffer[start + 1] == 10 else { return fail(.invalidChunk) }
                start += 2
                state = .chunkSize(head)
            case .trailers(let head, let bytes, let count):
                // A trailer line and its CRLF must fit in what the limit leaves; the empty
                // line that ends the trailers always does.
                let lineEnd: Int
                switch findLineEnd(from: start, maxLineBytes: max(limits.maxHeaderBytes - bytes - 2, 0)) {
                case .found(let index): lineEnd = index
                case .needMoreData: return .needMoreData
                case .tooLong: return fail(.headerTooLarge)
                case .bareCROrLF: return fail(.bareLineFeed)
                }
                if lineEnd == start {
                    start += 2
                    return finish(head)
                }
                // Trailer fields are validated like headers, counted against the same limits,
                // and then dropped: nothing in this server reads them.
                if Self.parseField(buffer[start..<lineEnd]) == nil { return fail(.malformedHeader) }
                if count + 1 > limits.maxHeaderCount { return fail(.tooManyHeaders) }
                state = .trailers(head, bytes: bytes + lineEnd + 2 - start, count: count + 1)
                start = lineEnd + 2
            }
        }
    }

    private mutating func fail(_ error: HTTPParseError) -> HTTPParseStep {
        state = .failed(error)
        return .failed(error)
    }

    private mutating func finish(_ head: HTTPRequestHead) -> HTTPParseStep {
        state = .head
        scanned = start
        let complete = body
        body = []
        return .request(head, body: complete)
    }

    private enum LineEnd {
        /// The index of the line's CR (followed by LF).
        case found(Int)
        case needMoreData
        /// No CRLF within `maxLineBytes` bytes of the line's start.
        case tooLong
        /// A CR not followed by LF, or an LF without CR.
        case bareCROrLF
    }

    /// Finds the CRLF that ends the line starting at `from`, whose bytes (CRLF excluded) may
    /// number at most `maxLineBytes`. The answer depends only on the bytes, never on how
    /// they were split into reads: `.tooLong` comes exactly when the first `maxLineBytes + 1`
    /// bytes are buffered and none of them is a CR or LF.
    private func findLineEnd(from: Int, maxLineBytes: Int) -> LineEnd {
        let window = from + maxLineBytes + 1  // the CR may sit at most at from + maxLineBytes
        var index = from
        while index < min(buffer.count, window) {
            let byte = buffer[index]
            if byte == 10 { return .bareCROrLF }
            if byte == 13 {
                if index + 1 >= buffer.count { return .needMoreData }
                return buffer[index + 1] == 10 ? .found(index) : .bareCROrLF
            }
            index += 1
        }
        return buffer.count >= window ? .tooLong : .needMoreData
    }

    private enum HeadResult {
        case success(HTTPRequestHead)
        case failure(HTTPParseError)
    }

    /// Looks for the end of the head; parses it when complete.
    private mutating func parseHead() -> HeadResult? {
        // Skip a few empty lines before the request line.
        // The count lives in the parser: they may arrive over several reads.
        while bufferedByteCount >= 2, buffer[start] == 13, buffer[start + 1] == 10 {
            leadingEmptyLines += 1
            if leadingEmptyLines > Self.maxLeadingEmptyLines { return .failure(.malformedRequestLine) }
            start += 2
        }
        if bufferedByteCount == 1, buffer[start] == 13 { return nil }
        if bufferedByteCount > 0, buffer[start] == 10 { return .failure(.bareLineFeed) }
        if scanned < start { scanned = start }

        // Scan for CRLF CRLF, rejecting a bare LF or CR as soon as it arrives.
        var index = scanned
        var terminator: Int?
        while index < buffer.count {
            // The head, final empty line included, must fit in maxHeaderBytes.
            if index - start >= limits.maxHeaderBytes { return .failure(.headerTooLarge) }
            let byte = buffer[index]
            if byte == 10 {
                if index == start || buffer[index - 1] != 13 { return .failure(.bareLineFeed) }
                if index - start >= 3, buffer[index - 2] == 10, buffer[index - 3] == 13 {
                    terminator = index + 1
                    break
                }
            } else if index > start, buffer[index - 1] == 13 {
                return .failure(.bareLineFeed)
            }
            index += 1
        }
        guard let end = terminator else {
            // Re-examine the last byte next time: it may be the CR of a CRLF.
            scanned = max(start, buffer.count - 1)
            return nil
        }
        let result = Self.parseHeadBytes(buffer[start..<(end - 4)], limits: limits)
        start = end
        scanned = end
        leadingEmptyLines = 0
        return result
    }

    private static func parseHeadBytes(_ bytes: ArraySlice<UInt8>, limits: HTTPParserLimits) -> HeadResult {
        var lines = splitLines(bytes)
        guard !lines.isEmpty else { return .failure(.malformedRequestLine) }
        let requestLine = lines.removeFirst()
        let parts = requestLine.split(separator: 32, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformedRequestLine) }
        let methodBytes = parts[0], targetBytes = parts[1], versionBytes = parts[2]
        guard !methodBytes.isEmpty, methodBytes.count <= 32, methodBytes.allSatisfy(isTokenByte) else {
            return .failure(.invalidMethod)
        }
        guard let version = parseVersion(versionBytes) else { return .failure(.malformedRequestLine) }
        guard version.major == 1, version.minor <= 1 else { return .failure(.unsupportedVersion) }
        let method = String(decoding: methodBytes, as: UTF8.self)
        guard let (target, path, query) = parseTarget(targetBytes, method: method) else {
            return .failure(.invalidTarget)
        }

        guard lines.count <= limits.maxHeaderCount else { return .failure(.tooManyHeaders) }
        // One pass: keep every field, and note the few that decide framing and connection reuse.
        var headers = HTTPHeaders()
        var hostCount = 0
        var transferEncodings: [String] = []
        var lengths: [String] = []
        var expectation: String?
        var connectionOptions: [String] = []
        for line in lines {
            if let first = line.first, first == 32 || first == 9 { return .failure(.obsoleteLineFolding) }
            guard let (name, value) = parseField(line) else { return .failure(.malformedHeader) }
            headers.add(name, value)
            switch name.utf8.count {
            case 4 where HTTPHeaders.equalsIgnoringCase(name, "Host"): hostCount += 1
            case 6 where HTTPHeaders.equalsIgnoringCase(name, "Expect"): expectation = value
            case 10 where HTTPHeaders.equalsIgnoringCase(name, "Connection"): connectionOptions.append(value)
            case 14 where HTTPHeaders.equalsIgnoringCase(name, "Content-Length"): lengths.append(value)
            case 17 where HTTPHeaders.equalsIgnoringCase(name, "Transfer-Encoding"): transferEncodings.append(value)
            default: break
            }
        }

        if hostCount > 1 { return .failure(.multipleHost) }
        if hostCount == 0 && version == .http1_1 { return .failure(.missingHost) }

        let framing: HTTPRequestHead.BodyFraming
        if !transferEncodings.isEmpty {
            if !lengths.isEmpty || version == .http1_0 { return .failure(.conflictingFraming) }
            guard transferEncodings.count == 1, transferEncodings[0].lowercased() == "chunked" else {
                return .failure(.unsupportedTransferEncoding)
            }
            framing = .chunked
        } else if lengths.count > 1 {
            return .failure(.conflictingContentLength)
        } else if let text = lengths.first {
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let length = Int(text)
            else { return .failure(.invalidContentLength) }
            framing = length == 0 ? .none : .length(length)
        } else {
            framing = .none
        }

        var expectsContinue = false
        if let expectation {
            guard expectation.lowercased() == "100-continue" else { return .failure(.unsupportedExpectation) }
            expectsContinue = version == .http1_1
        }

        var keepAlive = version == .http1_1
        for value in connectionOptions {
            for option in value.split(separator: ",") {
                switch option.trimmingSpaces().lowercased() {
                case "close": keepAlive = false
                case "keep-alive": if version == .http1_0 { keepAlive = true }
                default: break
                }
            }
        }

        return .success(
            HTTPRequestHead(
                method: method, target: target, path: path, query: query, version: version,
                headers: headers, keepAlive: keepAlive, expectsContinue: expectsContinue, framing: framing))
    }

    private static func splitLines(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 13, index + 1 < bytes.endIndex, bytes[index + 1] == 10 {
                lines.append(bytes[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(bytes[lineStart..<bytes.endIndex])
        return lines
    }

    private static func parseVersion(_ bytes: ArraySlice<UInt8>) -> HTTPVersion? {
        let text = Array(bytes)
        guard text.count == 8, text[0...4].elementsEqual("HTTP/".utf8), text[6] == 46,
            (48...57).contains(text[5]), (48...57).contains(text[7])
        else { return nil }
        return HTTPVersion(major: Int(text[5] - 48), minor: Int(text[7] - 48))
    }

    /// Accepts origin-form (`/path?query`), absolute-form (`http://host/path`) and, for
    /// OPTIONS, asterisk-form. Returns the raw target, the path and the query.
    private static func parseTarget(_ bytes: ArraySlice<UInt8>, method: String) -> (String, String, String?)? {
        guard !bytes.isEmpty, bytes.count <= 8192, bytes.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        let target = String(decoding: bytes, as: UTF8.self)
        if target == "*" { return method == "OPTIONS" ? (target, "*", nil) : nil }
        var rest = Substring(target)
        if rest.first != "/" {
            let lowered = rest.lowercased()
            let scheme: Int
            if lowered.hasPrefix("http://") {
                scheme = 7
            } else if lowered.hasPrefix("https://") {
                scheme = 8
            } else {
                return nil
            }
            rest = rest.dropFirst(scheme)
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else {
                return rest.isEmpty ? nil : (target, "/", nil)
            }
            if rest.startIndex == slash { return nil }
            rest = rest[slash...]
            if rest.first == "?" { rest = "/" + rest }
        }
        // Bytes, not `contains("#")`: that goes through Foundation's string search on every request.
        if rest.utf8.contains(UInt8(ascii: "#")) { return nil }
        if let mark = rest.firstIndex(of: "?") {
            return (target, String(rest[..<mark]), String(rest[rest.index(after: mark)...]))
        }
        return (target, String(rest), nil)
    }

    /// Parses `name: value`; `nil` for anything not allowed by RFC 9110 §5.
    static func parseField(_ line: ArraySlice<UInt8>) -> (String, String)? {
        guard let colon = line.firstIndex(of: 58), colon > line.startIndex else { return nil }
        let name = line[line.startIndex..<colon]
        guard name.allSatisfy(isTokenByte) else { return nil }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
        while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return nil }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// Parses `hex-size [; extensions]`; `nil` when malformed or larger than 2^60.
    private static func parseChunkSize(_ line: ArraySlice<UInt8>) -> Int? {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = hexValue(line[index]) {
            guard digits < 15 else { return nil }
            size = size << 4 | digit
            digits += 1
            index += 1
        }
        guard digits > 0 else { return nil }
        // Whitespace before extensions is tolerated as RFC 9112 §7.1.1 notes; anything but an
        // extension after the size is not.
        while index < line.endIndex, line[index] == 32 || line[index] == 9 { index += 1 }
        if index < line.endIndex {
            guard line[index] == 59 else { return nil }
            guard line[index...].allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return nil }
        }
        return size
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 65...70: Int(byte - 55)
        case 97...102: Int(byte - 87)
        default: nil
        }
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case 33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126: true
        default: false
        }
    }
}

extension Substring {
    func trimmingSpaces() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
