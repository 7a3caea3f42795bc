/// Why ``HTTP2Client/send(_:)`` produced no response (an HTTP error status is a response, not an error).
///
/// Cancelling the sending task throws `CancellationError` instead.
public enum HTTP2ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request's deadline passed, whether it was waiting for a connection or for the server.
    case timedOut
    /// No usable connection, or it broke before a complete response: connect or TLS failure, connection lost or
    /// closed (GOAWAY) under the request, stream reset by the server. The request may or may not have been
    /// processed.
    case connectionFailed(String)
    /// The peer broke HTTP/2 or HTTP rules, or the response was unusable (e.g. too large).
    case protocolError(String)
    /// The response came over HTTP/1.x; APNs and this client speak HTTP/2 only.
    case notHTTP2
    /// The client was shut down before the request completed.
    case shutdown
    /// The request waited for a connection after a connection failure and, as its push attempt's
    /// ``RequestWindow`` asks, was handed back unsent when one could be tried again: nothing was sent.
    case heldForConnection
    /// The request itself is malformed (bad path, header name or value); nothing was sent.
    case invalidRequest(String)
    /// The configuration cannot work (bad base URL, non-positive limits); thrown by ``HTTP2Client/init(configuration:)``.
    case invalidConfiguration(String)

    /// A stable snake-case code for logs and metrics labels.
    public var code: String {
        switch self {
        case .timedOut: "timed_out"
        case .connectionFailed: "connection_failed"
        case .protocolError: "protocol_error"
        case .notHTTP2: "not_http2"
        case .shutdown: "shutdown"
        case .heldForConnection: "held_for_connection"
        case .invalidRequest: "invalid_request"
        case .invalidConfiguration: "invalid_configuration"
        }
    }

    /// The code, followed by libcurl's or the client's detail where there is one.
    public var description: String {
        switch self {
        case .timedOut, .notHTTP2, .shutdown, .heldForConnection: code
        case .connectionFailed(let detail), .protocolError(let detail), .invalidRequest(let detail),
            .invalidConfiguration(let detail):
            "\(code): \(detail)"
        }
    }
}
