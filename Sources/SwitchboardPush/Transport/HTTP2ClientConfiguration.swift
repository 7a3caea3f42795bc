/// How an ``HTTP2Client`` connects: where to, how many connections and streams, deadlines, trust and identity.
///
/// ```swift
/// let apns = HTTP2ClientConfiguration(baseURL: "https://api.push.apple.com")
/// let local = HTTP2ClientConfiguration(baseURL: "http://127.0.0.1:8443") // h2c with prior knowledge
/// ```
public struct HTTP2ClientConfiguration: Sendable {
    /// Scheme, host and optional port, without a path: `https://api.push.apple.com` or `http://127.0.0.1:8080`.
    public var baseURL: String

    /// How many connections the client may open to the host (APNs wants few, long-lived ones).
    public var maxConnections: Int

    /// How many requests may share one connection at once; the server's own limit applies on top.
    public var maxConcurrentStreams: Int

    /// Extra connections the client may open only while slow requests (unanswered for longer
    /// than ``slowRequestThreshold``) hold stream slots that new requests would need: requests
    /// the server is slow to answer never hold back the others. Each slow request frees one slot
    /// for a new one, up to this many connections' worth. 0 keeps strictly to ``maxConnections``.
    public var overflowConnections: Int

    /// How long a request may wait for its answer before it counts as slow (APNs answers in
    /// milliseconds).
    public var slowRequestThreshold: Duration

    /// The deadline of every request, counted from ``HTTP2Client/send(_:)``; overridable per request.
    public var requestTimeout: Duration

    /// The longest a single TCP (and TLS) connect may take.
    public var connectTimeout: Duration

    /// A PEM bundle of trusted CA certificates; `nil` uses the system store.
    public var caFile: String?

    /// A PEM client certificate file for certificate-based authentication (APNs certificate auth).
    public var clientCertificatePEM: String?

    /// The PEM private key of ``clientCertificatePEM``; `nil` when the key is inside the certificate file.
    public var clientKeyPEM: String?

    /// Speak HTTP/2 without negotiation (h2c over `http://`). When `false` the client negotiates HTTP/2 over TLS
    /// (ALPN) and fails every response that did not come over HTTP/2 with ``HTTP2ClientError/notHTTP2``.
    ///
    /// With libcurl older than 7.89.0 (Debian 12 has 7.88.1) reusing an h2c connection fails (curl issue #10634),
    /// so there h2c opens one connection per request, without multiplexing; use it for local emulators only.
    public var priorKnowledge: Bool

    /// Accept answers over HTTP/1.1 from a TLS server that does not offer HTTP/2 (some Android
    /// vendors' push APIs), or HTTP/1.0; each request then holds a connection of its own for its duration.
    /// `false` (APNs, FCM) fails them with ``HTTP2ClientError/notHTTP2``.
    public var acceptsHTTP1 = false
    /// Keep the answer of a response whose body is larger than ``maxResponseBodySize``, with
    /// the body cut there, instead of failing it (a webhook receiver's 200 with a page behind
    /// it is still a 200). `false` fails them with ``HTTP2ClientError/protocolError(_:)``.
    public var discardsOversizedBody = false

    /// Wait for an existing connection to multiplex on rather than open a new one (CURLOPT_PIPEWAIT).
    public var pipewait: Bool

    /// The first pause after a connection-level failure; it doubles with every further failure.
    public var reconnectInitialDelay: Duration

    /// The longest pause between connection attempts after repeated failures.
    public var reconnectMaximumDelay: Duration

    /// Responses with a larger body fail with ``HTTP2ClientError/protocolError(_:)`` (APNs replies are tiny).
    public var maxResponseBodySize: Int

    /// Creates a configuration; `priorKnowledge` defaults to `true` exactly when `baseURL` is `http://`.
    public init(
        baseURL: String,
        maxConnections: Int = 1,
        maxConcurrentStreams: Int = 100,
        overflowConnections: Int = 2,
        slowRequestThreshold: Duration = .seconds(1),
        requestTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(5),
        caFile: String? = nil,
        clientCertificatePEM: String? = nil,
        clientKeyPEM: String? = nil,
        priorKnowledge: Bool? = nil,
        pipewait: Bool = true,
        reconnectInitialDelay: Duration = .milliseconds(100),
        reconnectMaximumDelay: Duration = .seconds(5),
        maxResponseBodySize: Int = 1 << 20
    ) {
        self.baseURL = baseURL
        self.maxConnections = maxConnections
        self.maxConcurrentStreams = maxConcurrentStreams
        self.overflowConnections = overflowConnections
        self.slowRequestThreshold = slowRequestThreshold
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.caFile = caFile
        self.clientCertificatePEM = clientCertificatePEM
        self.clientKeyPEM = clientKeyPEM
        self.priorKnowledge = priorKnowledge ?? baseURL.lowercased().hasPrefix("http://")
        self.pipewait = pipewait
        self.reconnectInitialDelay = reconnectInitialDelay
        self.reconnectMaximumDelay = reconnectMaximumDelay
        self.maxResponseBodySize = maxResponseBodySize
    }

    /// Checks the values libcurl would otherwise reject late or silently clamp; returns `baseURL` without a trailing `/`.
    func validatedBaseURL() throws(HTTP2ClientError) -> String {
        let lower = baseURL.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw .invalidConfiguration("baseURL must start with http:// or https://, got \(baseURL)")
        }
        guard !baseURL.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
        else {
            throw .invalidConfiguration("baseURL contains whitespace or control characters")
        }
        guard maxConnections >= 1, maxConcurrentStreams >= 1 else {
            throw .invalidConfiguration("maxConnections and maxConcurrentStreams must be at least 1")
        }
        guard overflowConnections >= 0, slowRequestThreshold > .zero else {
            throw .invalidConfiguration(
                "overflowConnections must not be negative and slowRequestThreshold must be positive")
        }
        guard requestTimeout > .zero, connectTimeout > .zero else {
            throw .invalidConfiguration("requestTimeout and connectTimeout must be positive")
        }
        guard reconnectInitialDelay > .zero, reconnectMaximumDelay >= reconnectInitialDelay else {
            throw .invalidConfiguration("reconnect delays must be positive and initial <= maximum")
        }
        guard maxResponseBodySize >= 0 else { throw .invalidConfiguration("maxResponseBodySize must not be negative") }
        var trimmed = baseURL
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a positive remainder never becomes 0 (which libcurl reads as "no limit").
    var millisecondsRoundedUp: Int {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        let rest = attoseconds % 1_000_000_000_000_000
        return Int(clamping: rest > 0 ? milliseconds + 1 : milliseconds)
    }
}
