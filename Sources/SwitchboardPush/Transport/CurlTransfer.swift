import CCurl
import Synchronization

/// What a transfer needs to ask its loop from inside libcurl callbacks (both run on the loop thread, inside
/// `curl_multi_perform`).
protocol CurlTransferDelegate: AnyObject {
    /// libcurl is about to `connect()` a new socket for `transfer`; `false` aborts the attempt before any packet.
    func transferWantsConnection(_ transfer: CurlTransfer) -> Bool
    /// A connection (new or reused) is ready and `transfer`'s request is about to be sent.
    func transferConnectionReady(_ transfer: CurlTransfer)
}

/// Owns one `CURL*` easy handle for one request, with everything libcurl points into while it runs (request
/// body copy, header list, error buffer) and the response being collected. Freed in `deinit`, after the loop has
/// removed it from the multi handle. Only the loop thread touches it; callbacks find it through `Unmanaged`
/// (unretained: the loop's tables keep it alive for as long as libcurl may call back).
final class CurlTransfer {
    let id: UInt64
    let deadline: ContinuousClock.Instant
    let continuation: CheckedContinuation<HTTP2Response, any Error>
    let easy: UnsafeMutableRawPointer
    unowned let delegate: any CurlTransferDelegate
    private let storage: HTTP2ClientStorage

    /// The reconnect-gate epoch it was admitted under.
    var epoch: UInt64 = 0
    /// When it was last handed to libcurl.
    private(set) var admittedAt: ContinuousClock.Instant = .now
    /// The pre-request callback ran: the request went out on a ready connection.
    private(set) var requestSent = false
    /// Its connection attempt was refused by the reconnect gate (nothing reached the network).
    private(set) var connectionVetoed = false
    /// Handed back unsent, not sent, once the reconnect gate has held it (``RequestWindow``).
    let handBackWhenHeld: Bool
    /// The reconnect gate held it back after a connection failure.
    var heldByGate = false

    private let maxBodySize: Int
    private let acceptsHTTP1: Bool
    private let discardsOversizedBody: Bool
    private var bodyTooLarge = false
    private var responseHeaders: [(String, String)] = []
    private var responseBody: [UInt8] = []
    private let requestBody: UnsafeMutableRawBufferPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init(
        id: UInt64, pending: PendingRequest, url: String, configuration: HTTP2ClientConfiguration,
        delegate: any CurlTransferDelegate, storage: HTTP2ClientStorage
    ) throws(HTTP2ClientError) {
        guard let easy = curl_easy_init() else { throw .protocolError("curl_easy_init returned NULL") }
        self.id = id
        self.deadline = pending.deadline
        self.handBackWhenHeld = pending.handBackWhenHeld
        self.continuation = pending.continuation
        self.easy = easy
        self.delegate = delegate
        self.storage = storage
        self.maxBodySize = configuration.maxResponseBodySize
        self.acceptsHTTP1 = configuration.acceptsHTTP1
        self.discardsOversizedBody = configuration.discardsOversizedBody
        let body = pending.request.body
        let bodyCopy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(body.count, 1), alignment: 1)
        body.withUnsafeBytes { bodyCopy.copyMemory(from: $0) }
        requestBody = bodyCopy
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        storage.liveTransfers.add(1, ordering: .relaxed)
        try configure(request: pending.request, url: url, configuration: configuration)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        requestBody.deallocate()
        errorBuffer.deallocate()
        storage.liveTransfers.subtract(1, ordering: .relaxed)
    }

    // MARK: Lifecycle driven by the loop

    /// Sets the deadline that is left and readies the handle for (re-)adding to the multi handle.
    func arm(now: ContinuousClock.Instant, connectTimeout: Duration) throws(HTTP2ClientError) {
        admittedAt = now
        let remaining = max(1, (deadline - now).millisecondsRoundedUp)
        try setLong(CURLOPT_TIMEOUT_MS, remaining, "CURLOPT_TIMEOUT_MS")
        try setLong(
            CURLOPT_CONNECTTIMEOUT_MS, min(remaining, connectTimeout.millisecondsRoundedUp), "CURLOPT_CONNECTTIMEOUT_MS"
        )
        requestSent = false
        connectionVetoed = false
        bodyTooLarge = false
        responseHeaders.removeAll()
        responseBody.removeAll()
        errorBuffer[0] = 0
    }

    /// Turns libcurl's verdict into the caller's result.
    func result(for code: CURLcode) -> Result<HTTP2Response, HTTP2ClientError> {
        if bodyTooLarge, !discardsOversizedBody {
            return .failure(.protocolError("response body larger than \(maxBodySize) bytes"))
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : CurlResult.message(code)
            return .failure(CurlResult.error(for: code, detail: detail))
        }
        var status = 0
        var version = 0
        do {
            try CurlResult.check(
                sb_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status), "CURLINFO_RESPONSE_CODE")
            try CurlResult.check(
                sb_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version), "CURLINFO_HTTP_VERSION")
        } catch {
            return .failure(error)
        }
        let http1 = version == CURL_HTTP_VERSION_1_1 || version == CURL_HTTP_VERSION_1_0
        guard version == CURL_HTTP_VERSION_2_0 || (acceptsHTTP1 && http1) else {
            return .failure(.notHTTP2)
        }
        return .success(
            HTTP2Response(
                status: status, headers: responseHeaders, body: responseBody,
                httpVersion: version == CURL_HTTP_VERSION_2_0 ? "2" : version == CURL_HTTP_VERSION_1_0 ? "1.0" : "1.1"))
    }

    // MARK: Options

    private func configure(
        request: HTTP2Request, url: String, configuration: HTTP2ClientConfiguration
    ) throws(HTTP2ClientError) {
        try Self.validate(request)
        try setPointer(CURLOPT_ERRORBUFFER, UnsafeRawPointer(errorBuffer), "CURLOPT_ERRORBUFFER")
        try setString(CURLOPT_URL, url + request.path, "CURLOPT_URL")
        try setString(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try setLong(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        try setLong(CURLOPT_TCP_KEEPALIVE, 1, "CURLOPT_TCP_KEEPALIVE")
        if configuration.needsOneConnectionPerRequest {
            // libcurl < 7.89 breaks any reuse of an h2c prior-knowledge connection (see CurlGlobal).
            try setLong(CURLOPT_FORBID_REUSE, 1, "CURLOPT_FORBID_REUSE")
            try setLong(CURLOPT_PIPEWAIT, 0, "CURLOPT_PIPEWAIT")
        } else {
            try setLong(CURLOPT_PIPEWAIT, configuration.pipewait ? 1 : 0, "CURLOPT_PIPEWAIT")
        }
        try setLong(
            CURLOPT_HTTP_VERSION,
            configuration.priorKnowledge ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS,
            "CURLOPT_HTTP_VERSION")
        if let caFile = configuration.caFile { try setString(CURLOPT_CAINFO, caFile, "CURLOPT_CAINFO") }
        if let certificate = configuration.clientCertificatePEM {
            try setString(CURLOPT_SSLCERTTYPE, "PEM", "CURLOPT_SSLCERTTYPE")
            try setString(CURLOPT_SSLCERT, certificate, "CURLOPT_SSLCERT")
        }
        if let key = configuration.clientKeyPEM {
            try setString(CURLOPT_SSLKEYTYPE, "PEM", "CURLOPT_SSLKEYTYPE")
            try setString(CURLOPT_SSLKEY, key, "CURLOPT_SSLKEY")
        }
        try configureMethodAndBody(request)
        try configureHeaders(request)
        try configureCallbacks()
    }

    private func configureMethodAndBody(_ request: HTTP2Request) throws(HTTP2ClientError) {
        let method = request.method
        let sendsBody = !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(method)
        if sendsBody {
            try setOffset(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count), "CURLOPT_POSTFIELDSIZE_LARGE")
            try setPointer(CURLOPT_POSTFIELDS, UnsafeRawPointer(requestBody.baseAddress), "CURLOPT_POSTFIELDS")
            if method != "POST" { try setString(CURLOPT_CUSTOMREQUEST, method, "CURLOPT_CUSTOMREQUEST") }
        } else if method == "GET" {
            try setLong(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
        } else if method == "HEAD" {
            try setLong(CURLOPT_NOBODY, 1, "CURLOPT_NOBODY")
        } else {
            try setString(CURLOPT_CUSTOMREQUEST, method, "CURLOPT_CUSTOMREQUEST")
        }
    }

    private func configureHeaders(_ request: HTTP2Request) throws(HTTP2ClientError) {
        var lines: [String] = []
        var names: Set<String> = []
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            names.insert(lowered)
            // "name;" is libcurl's spelling of a header with an empty value ("name:" would delete it).
            lines.append(value.isEmpty ? "\(lowered);" : "\(lowered): \(value)")
        }
        // Switch off the headers libcurl would add on its own, so the server sees exactly the caller's headers.
        for implicit in ["accept", "content-type", "expect"] where !names.contains(implicit) {
            lines.append("\(implicit):")
        }
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw .protocolError("curl_slist_append returned NULL")
            }
            headerList = appended
        }
        try setPointer(CURLOPT_HTTPHEADER, UnsafeRawPointer(headerList), "CURLOPT_HTTPHEADER")
    }

    private func configureCallbacks() throws(HTTP2ClientError) {
        let context = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        try CurlResult.check(
            sb_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().received(body: data, size * count)
            }, "CURLOPT_WRITEFUNCTION")
        try setPointer(CURLOPT_WRITEDATA, context, "CURLOPT_WRITEDATA")
        try CurlResult.check(
            sb_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().received(header: data, size * count)
            }, "CURLOPT_HEADERFUNCTION")
        try setPointer(CURLOPT_HEADERDATA, context, "CURLOPT_HEADERDATA")
        try CurlResult.check(
            sb_curl_easy_setopt_sockopt_callback(easy) { context, _, purpose in
                guard purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKOPT_OK }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
                return transfer.connectionAllowed() ? CURL_SOCKOPT_OK : CURL_SOCKOPT_ERROR
            }, "CURLOPT_SOCKOPTFUNCTION")
        try setPointer(CURLOPT_SOCKOPTDATA, context, "CURLOPT_SOCKOPTDATA")
        try CurlResult.check(
            sb_curl_easy_setopt_prereq_callback(easy) { context, _, _, _, _ in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().connectionReady()
                return CURL_PREREQFUNC_OK
            }, "CURLOPT_PREREQFUNCTION")
        try setPointer(CURLOPT_PREREQDATA, context, "CURLOPT_PREREQDATA")
    }

    /// Rejects what would let a caller smuggle extra lines into the request or that libcurl would mangle.
    static func validate(_ request: HTTP2Request) throws(HTTP2ClientError) {
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(isTokenByte) else {
            throw .invalidRequest("method \"\(request.method)\" is not an HTTP token")
        }
        guard request.path.hasPrefix("/"), request.path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidRequest("path must start with / and hold only visible ASCII")
        }
        for (name, value) in request.headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                throw .invalidRequest("header name \"\(name)\" is not an HTTP token")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }),
                value.first?.isWhitespace != true, value.last?.isWhitespace != true
            else {
                throw .invalidRequest("value of header \"\(name)\" has CR, LF, NUL or surrounding whitespace")
            }
        }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    // MARK: Callbacks (loop thread, inside curl_multi_perform)

    private func received(body data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0, let data else { return 0 }
        guard responseBody.count + count <= maxBodySize else {
            bodyTooLarge = true
            // Read on and keep nothing more: only the status counts.
            if discardsOversizedBody { return count }
            return 0  // any count other than `count` makes libcurl fail the transfer with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    /// libcurl delivers one header line per call, status line first ("HTTP/2 200"), blank line last.
    private func received(header data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0, let data else { return count }
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        if bytes.starts(with: "HTTP/".utf8) {
            responseHeaders.removeAll()  // a new response block (e.g. after a 1xx) replaces the previous one
            return count
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return count }  // blank line
        let name = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        let rawValue = String(decoding: bytes[(colon + 1)...], as: UTF8.self)
        let value = rawValue.trimmingASCIIWhitespace()
        responseHeaders.append((name, value))
        return count
    }

    private func connectionAllowed() -> Bool {
        let allowed = delegate.transferWantsConnection(self)
        if !allowed { connectionVetoed = true }
        return allowed
    }

    private func connectionReady() {
        requestSent = true
        delegate.transferConnectionReady(self)
    }

    // MARK: setopt helpers

    private func setLong(_ option: CURLoption, _ value: Int, _ name: String) throws(HTTP2ClientError) {
        try CurlResult.check(sb_curl_easy_setopt_long(easy, option, value), "curl_easy_setopt(\(name))")
    }

    private func setString(_ option: CURLoption, _ value: String, _ name: String) throws(HTTP2ClientError) {
        // libcurl copies string options (except CURLOPT_POSTFIELDS, which is set through setPointer).
        let code = value.withCString { sb_curl_easy_setopt_pointer(easy, option, $0) }
        try CurlResult.check(code, "curl_easy_setopt(\(name))")
    }

    private func setPointer(_ option: CURLoption, _ value: UnsafeRawPointer?, _ name: String) throws(HTTP2ClientError) {
        try CurlResult.check(sb_curl_easy_setopt_pointer(easy, option, value), "curl_easy_setopt(\(name))")
    }

    private func setOffset(_ option: CURLoption, _ value: curl_off_t, _ name: String) throws(HTTP2ClientError) {
        try CurlResult.check(sb_curl_easy_setopt_off_t(easy, option, value), "curl_easy_setopt(\(name))")
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
