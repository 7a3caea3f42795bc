/// One HTTP/2 request: method, path (joined to the client's base URL), headers and body.
///
/// ```swift
/// let request = HTTP2Request(
///     method: "POST", path: "/3/device/\(token)",
///     headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
///     body: Array(payload.utf8))
/// ```
public struct HTTP2Request: Sendable {
    /// The request method, e.g. `POST`.
    public var method: String
    /// The path and optional query, starting with `/`.
    public var path: String
    /// Request headers in order; names are sent lowercased (HTTP/2 requires it). Only these headers are sent,
    /// besides the pseudo-headers and a `content-length` for bodies.
    public var headers: [(String, String)]
    /// The request body; empty for none.
    public var body: [UInt8]
    /// This request's deadline, counted from ``HTTP2Client/send(_:)``; `nil` uses the configuration's `requestTimeout`.
    public var timeout: Duration?

    /// Creates a request.
    public init(
        method: String = "POST", path: String, headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: Duration? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A complete HTTP/2 response: status, headers (names lowercased, in arrival order), body and protocol version.
public struct HTTP2Response: Sendable {
    /// The `:status` code, e.g. 200 or 410.
    public var status: Int
    /// Response headers in arrival order with lowercased names, without the status line.
    public var headers: [(String, String)]
    /// The response body bytes.
    public var body: [UInt8]
    /// The protocol version the response came over: `"2"` for every response this client returns.
    public var httpVersion: String

    /// Creates a response (for tests and emulators; the client builds its own).
    public init(status: Int, headers: [(String, String)], body: [UInt8], httpVersion: String = "2") {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first value of the header `name` (case-insensitive), e.g. `response.headerValue("apns-id")`.
    public func headerValue(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.0 == lowered }?.1
    }
}
