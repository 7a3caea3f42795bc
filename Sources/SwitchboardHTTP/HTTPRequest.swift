/// A complete request as handlers see it: transport-neutral, body already read.
public struct HTTPRequest: Sendable {
    /// The request line and headers.
    public var head: HTTPRequestHead
    /// The whole body (de-chunked).
    public var body: [UInt8]
    /// The peer address as `host:port`, for logs.
    public var remoteAddress: String

    /// Creates a request as the transport hands it to handlers.
    public init(head: HTTPRequestHead, body: [UInt8] = [], remoteAddress: String) {
        self.head = head
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Creates a request from its parts, for this package's in-process tests (the peer is
    /// `in-process`); not part of the module's public API.
    package init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        let mark = target.firstIndex(of: "?")
        let path = mark.map { String(target[..<$0]) } ?? target
        let query = mark.map { String(target[target.index(after: $0)...]) }
        self.init(
            head: HTTPRequestHead(
                method: method, target: target, path: path, query: query, version: .http1_1,
                headers: headers, keepAlive: true, expectsContinue: false,
                framing: body.isEmpty ? .none : .length(body.count)),
            body: body, remoteAddress: "in-process")
    }

    /// The method token.
    public var method: String { head.method }
    /// The path, still percent-encoded.
    public var path: String { head.path }
    /// The header fields.
    public var headers: HTTPHeaders { head.headers }

    /// The query parameters, percent-decoded (`+` is a space); the last value of a repeated name wins.
    public var queryParameters: [String: String] {
        guard let query = head.query, !query.isEmpty else { return [:] }
        var result: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentDecoding.decode(parts[0], plusIsSpace: true) ?? String(parts[0])
            let value = parts.count > 1 ? (PercentDecoding.decode(parts[1], plusIsSpace: true) ?? String(parts[1])) : ""
            result[name] = value
        }
        return result
    }
}

/// Percent-decoding for paths and query strings.
public enum PercentDecoding {
    /// Decodes `%XX` escapes; `nil` for a malformed escape or bytes that are not UTF-8.
    public static func decode(_ text: Substring, plusIsSpace: Bool = false) -> String? {
        guard text.utf8.contains(where: { $0 == 37 || (plusIsSpace && $0 == 43) }) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == 37 {
                guard let high = iterator.next().flatMap(hex), let low = iterator.next().flatMap(hex) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else if byte == 43 && plusIsSpace {
                bytes.append(32)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }
}
