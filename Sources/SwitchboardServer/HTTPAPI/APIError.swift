import SwitchboardHTTP
import SwitchboardObservability

/// An error the API answers with: a status and the spec's envelope
/// `{"error": {"code": "UPPER_SNAKE", "message": "...", "field"?: "..."}}`.
public struct APIError: Error, Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// The stable error code.
    public var code: String
    /// A human-readable explanation.
    public var message: String
    /// The request field at fault, when one is.
    public var field: String?
    /// Seconds before the request may be tried again (`Retry-After`), for 429 and 503.
    public var retryAfter: Int?

    /// Creates an error.
    public init(status: Int, code: String, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// 400 for input that is not acceptable.
    public static func validation(_ message: String, field: String? = nil) -> APIError {
        APIError(status: 400, code: "VALIDATION_FAILED", message: message, field: field)
    }

    /// 404 for an unknown route or a resource that does not exist or is not visible.
    public static func notFound(_ message: String = "not found") -> APIError {
        APIError(status: 404, code: "NOT_FOUND", message: message)
    }

    /// 405 with the methods the path does allow.
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(status: 405, code: "METHOD_NOT_ALLOWED", message: "allowed: \(allowed.joined(separator: ", "))")
    }

    /// 429 `RATE_LIMITED` with `Retry-After`: `what` was done too often (``RateLimiter``).
    public static func rateLimited(_ what: String, retryAfter seconds: Int) -> APIError {
        APIError(status: 429, code: "RATE_LIMITED", message: "too many \(what): try again in \(seconds) s", retryAfter: seconds)
    }

    /// 500 for a failure that is the server's fault; the detail goes to the log, not the client.
    public static let `internal` = APIError(status: 500, code: "INTERNAL", message: "internal server error")

    /// The envelope as a response.
    public var response: HTTPResponse {
        var body = #"{"error":{"code":"\#(JSONText.escape(code))","message":"\#(JSONText.escape(message))""#
        if let field { body += #","field":"\#(JSONText.escape(field))""# }
        body += "}}"
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if status == 405, message.hasPrefix("allowed: ") { headers.add("Allow", String(message.dropFirst(9))) }
        if let retryAfter { headers.add("Retry-After", String(max(1, retryAfter))) }
        return HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }
}
