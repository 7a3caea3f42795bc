import SwitchboardHTTP
import SwitchboardObservability
import SwitchboardWire

/// An error the API answers with: a status and the spec's envelope
/// `{"error": {"code": "UPPER_SNAKE", "message": "...", "field"?: "..."}}`.
///
/// The code comes from the one catalogue, ``ErrorCode``, and brings its status with it:
/// `throw APIError(.callBusy, "you are already in a call")`.
public struct APIError: Error, Sendable, Equatable {
    /// The HTTP status: the code's own, unless the code is one answered with several.
    public var status: Int
    /// The stable error code.
    public var code: ErrorCode
    /// A human-readable explanation.
    public var message: String
    /// The request field at fault, when one is.
    public var field: String?
    /// Seconds before the request may be tried again (`Retry-After`), for 429 and 503.
    public var retryAfter: Int?
    /// The methods the path takes, for 405's `Allow` header.
    public var allowed: [String]?

    /// An error with `code`'s status, or `status` for a code some routes answer otherwise.
    public init(_ code: ErrorCode, _ message: String, field: String? = nil, retryAfter: Int? = nil, status: Int? = nil)
    {
        self.status = status ?? code.status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// 400 for input that is not acceptable.
    public static func validation(_ message: String, field: String? = nil) -> APIError {
        APIError(.validationFailed, message, field: field)
    }

    /// 404 for an unknown route or a resource that does not exist or is not visible.
    public static func notFound(_ message: String = "not found") -> APIError {
        APIError(.notFound, message)
    }

    /// 405 with the methods the path does allow.
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        var error = APIError(.methodNotAllowed, "allowed: \(allowed.joined(separator: ", "))")
        error.allowed = allowed
        return error
    }

    /// 429 `RATE_LIMITED` with `Retry-After`: `what` was done too often (``RateLimiter``).
    public static func rateLimited(_ what: String, retryAfter seconds: Int) -> APIError {
        APIError(.rateLimited, "too many \(what): try again in \(seconds) s", retryAfter: seconds)
    }

    /// 500 for a failure that is the server's fault; the detail goes to the log, not the client.
    public static let `internal` = APIError(.internal, "internal server error")

    /// The HTTP core's refusals (a malformed head, a body too large, a timeout), in the envelope.
    public static func httpRefusal(status: Int, code: String, message: String) -> HTTPResponse {
        APIError(ErrorCode(rawValue: code), message, status: status).response
    }

    /// The envelope as a response.
    public var response: HTTPResponse {
        var body = #"{"error":{"code":"\#(JSONText.escape(code.rawValue))","message":"\#(JSONText.escape(message))""#
        if let field { body += #","field":"\#(JSONText.escape(field))""# }
        body += "}}"
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let allowed { headers.add("Allow", allowed.joined(separator: ", ")) }
        if let retryAfter { headers.add("Retry-After", String(max(1, retryAfter))) }
        return HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }
}
