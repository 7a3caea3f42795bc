// Pure value types shared by the parser and the server; stdlib only (the fuzz target compiles
// this folder on its own).

/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers.add("Content-Type", "application/json")
/// headers["content-type"] // "application/json"
/// ```
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// The fields in the order they were received or added.
    public private(set) var fields: [(name: String, value: String)] = []

    /// Creates an empty header list.
    public init() {}

    /// Creates a header list from name/value pairs, in order.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// The first value of the named field, or `nil`.
    public subscript(name: String) -> String? {
        fields.first { Self.equalsIgnoringCase($0.name, name) }?.value
    }

    /// Every value of the named field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// Whether the named field is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Appends a field, keeping any existing ones of that name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field of that name.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalsIgnoringCase($0.name, name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// ASCII case-insensitive comparison, as header names require.
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let a = a.utf8, b = b.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { lowercasedASCII($0) == lowercasedASCII($1) }
    }
}

@inline(__always)
func lowercasedASCII(_ byte: UInt8) -> UInt8 {
    (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
}

/// An HTTP version as sent on the request line.
public struct HTTPVersion: Sendable, Equatable, CustomStringConvertible {
    /// The major version.
    public var major: Int
    /// The minor version.
    public var minor: Int
    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// `HTTP/1.1` style text.
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// The parsed head of a request: request line and header fields, plus what they imply.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The method token, case-sensitive as sent (`GET`, `POST`, ...).
    public var method: String
    /// The request target exactly as sent.
    public var target: String
    /// The path part of the target, still percent-encoded; always starts with `/` (or is `*`).
    public var path: String
    /// The query string without the `?`, or `nil` when the target has none.
    public var query: String?
    /// The protocol version.
    public var version: HTTPVersion
    /// The header fields in order.
    public var headers: HTTPHeaders
    /// Whether the connection stays open after the response (from version and `Connection`).
    public var keepAlive: Bool
    /// Whether the client sent `Expect: 100-continue`.
    public var expectsContinue: Bool
    /// How the body is delimited.
    public var framing: BodyFraming

    /// How a request body is delimited.
    public enum BodyFraming: Sendable, Equatable {
        /// No body.
        case none
        /// A `Content-Length` body of this many bytes.
        case length(Int)
        /// A `Transfer-Encoding: chunked` body.
        case chunked
    }
}

/// Limits the parser enforces; exceeding one is an error with a fitting status.
public struct HTTPParserLimits: Sendable, Equatable {
    /// The most bytes the request line and headers may take together (431 beyond).
    public var maxHeaderBytes: Int
    /// The most header fields a request may carry (431 beyond).
    public var maxHeaderCount: Int
    /// The most body bytes a request may carry, after de-chunking (413 beyond).
    public var maxBodyBytes: Int

    /// Creates limits; the defaults are 16 KiB of head, 100 fields and a 1 MiB body.
    public init(maxHeaderBytes: Int = 16 * 1024, maxHeaderCount: Int = 100, maxBodyBytes: Int = 1 << 20) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Why a request could not be parsed; each maps to a status and a stable error code.
public enum HTTPParseError: Error, Sendable, Equatable {
    case malformedRequestLine
    case invalidMethod
    case invalidTarget
    case unsupportedVersion
    case bareLineFeed
    case malformedHeader
    case obsoleteLineFolding
    case headerTooLarge
    case tooManyHeaders
    case invalidContentLength
    case conflictingContentLength
    case conflictingFraming
    case unsupportedTransferEncoding
    case missingHost
    case multipleHost
    case invalidChunk
    case bodyTooLarge
    case unsupportedExpectation

    /// The HTTP status the server answers with.
    public var status: Int {
        switch self {
        case .headerTooLarge, .tooManyHeaders: 431
        case .bodyTooLarge: 413
        case .unsupportedVersion: 505
        case .unsupportedTransferEncoding: 501
        case .unsupportedExpectation: 417
        default: 400
        }
    }

    /// The error code of the response envelope.
    public var code: String {
        switch status {
        case 431: "HEADERS_TOO_LARGE"
        case 413: "BODY_TOO_LARGE"
        case 505: "HTTP_VERSION_NOT_SUPPORTED"
        case 501: "NOT_IMPLEMENTED"
        case 417: "EXPECTATION_FAILED"
        default: "BAD_REQUEST"
        }
    }

    /// A human-readable explanation for the response envelope.
    public var message: String {
        switch self {
        case .malformedRequestLine: "malformed request line"
        case .invalidMethod: "invalid method token"
        case .invalidTarget: "invalid request target"
        case .unsupportedVersion: "only HTTP/1.0 and HTTP/1.1 are supported"
        case .bareLineFeed: "lines must end with CRLF"
        case .malformedHeader: "malformed header field"
        case .obsoleteLineFolding: "obsolete header line folding is not accepted"
        case .headerTooLarge: "request head too large"
        case .tooManyHeaders: "too many header fields"
        case .invalidContentLength: "invalid Content-Length"
        case .conflictingContentLength: "more than one Content-Length"
        case .conflictingFraming: "both Transfer-Encoding and Content-Length, or chunked in HTTP/1.0"
        case .unsupportedTransferEncoding: "only Transfer-Encoding: chunked is supported"
        case .missingHost: "HTTP/1.1 requests need a Host header"
        case .multipleHost: "more than one Host header"
        case .invalidChunk: "malformed chunked body"
        case .bodyTooLarge: "request body too large"
        case .unsupportedExpectation: "only Expect: 100-continue is supported"
        }
    }
}
