/// A response: status, headers and either a fixed body or a stream of bytes.
///
/// ```swift
/// HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
/// ```
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields; the server adds `Content-Length`, `Connection`, `Date` and framing itself.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Body

    /// A response body.
    public enum Body: Sendable {
        /// A body known in full.
        case bytes([UInt8])
        /// A body produced over time (Server-Sent Events): the head is sent first, then whatever
        /// the producer writes. The stream ends when the producer returns; a producer that throws
        /// closes the connection so the client sees an incomplete stream. When the client goes
        /// away, the producer's task is cancelled and writes throw `HTTPStreamClosed`.
        case stream(@Sendable (HTTPStreamWriter) async throws -> Void)
        /// No body: after the head (`101 Switching Protocols`) the connection belongs to this
        /// handler, on the loop's thread, with no task between the socket and it.
        case takeOver(any HTTPConnectionHandler)
    }

    /// Creates a response with a fixed body.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    /// Creates a streaming response.
    public init(
        status: Int, headers: HTTPHeaders = HTTPHeaders(),
        stream: @escaping @Sendable (HTTPStreamWriter) async throws -> Void
    ) {
        self.status = status
        self.headers = headers
        self.body = .stream(stream)
    }

    /// A `101 Switching Protocols` head (`headers` name the protocol: `Upgrade` and its own
    /// fields; the server adds `Connection: Upgrade`), after which `handler` owns the connection.
    public init(switchingProtocols headers: HTTPHeaders, to handler: any HTTPConnectionHandler) {
        self.status = 101
        self.headers = headers
        self.body = .takeOver(handler)
    }

    /// The fixed body's bytes, or empty for a stream.
    public var bodyBytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }

    /// The standard reason phrase for a status code.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

extension HTTPHeaders: ExpressibleByDictionaryLiteral {
    /// Creates headers from a literal, in order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }
}

/// Thrown by `HTTPStreamWriter.write` once the client has gone or the server is closing.
public struct HTTPStreamClosed: Error, Sendable {}

/// Writes the body of a streaming response. Writes wait while too much is still unsent
/// (back-pressure) and throw `HTTPStreamClosed` once the client has gone.
public struct HTTPStreamWriter: Sendable {
    let channel: StreamChannel

    /// Sends bytes to the client.
    public func write(_ bytes: [UInt8]) async throws {
        try await channel.write(bytes)
    }

    /// Sends UTF-8 text to the client.
    public func write(_ text: String) async throws {
        try await channel.write(Array(text.utf8))
    }

    /// Whether the client is still there.
    public var isOpen: Bool { channel.isOpen }
}
