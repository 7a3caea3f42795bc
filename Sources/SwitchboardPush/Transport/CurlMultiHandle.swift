import CCurl

/// Process-wide libcurl set-up.
enum CurlGlobal {
    /// `curl_global_init` must run once before the first handle; a static `let` runs its initializer exactly once,
    /// thread-safely.
    private static let initResult: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    static func ensureInitialized() throws(HTTP2ClientError) {
        try CurlResult.check(initResult, "curl_global_init")
    }

    /// libcurl before 7.89.0 (Debian 12 ships 7.88.1) fails every request that reuses an h2c prior-knowledge
    /// connection with "Error in the HTTP2 framing layer" (curl issue #10634, fixed by curl PR #10643). TLS
    /// connections (ALPN h2) are not affected.
    static let priorKnowledgeReuseIsBroken: Bool = {
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return true }
        return info.pointee.version_num < 0x07_59_00
    }()
}

extension HTTP2ClientConfiguration {
    /// h2c on a libcurl with the reuse bug: every request gets its own connection (no multiplexing), which is
    /// correct but slow; fine for a local emulator, never the case for APNs (TLS).
    var needsOneConnectionPerRequest: Bool { priorKnowledge && CurlGlobal.priorKnowledgeReuseIsBroken }
}

/// Owns one `CURLM*` and frees it in `deinit`. Only the client's loop thread uses it, except for
/// `curl_multi_wakeup`, which libcurl allows from any thread (the client calls it under its lock, and never
/// after the loop has withdrawn the handle from the lock).
final class CurlMultiHandle {
    let raw: UnsafeMutableRawPointer

    init(configuration: HTTP2ClientConfiguration) throws(HTTP2ClientError) {
        guard let raw = curl_multi_init() else { throw .protocolError("curl_multi_init returned NULL") }
        self.raw = raw
        let pipelining = configuration.needsOneConnectionPerRequest ? CURLPIPE_NOTHING : CURLPIPE_MULTIPLEX
        try setLong(CURLMOPT_PIPELINING, pipelining, "CURLMOPT_PIPELINING")
        // The overflow connections are opened only when the loop admits requests past the regular
        // connections' streams, which it does only for slots that slow requests hold.
        let connections = configuration.maxConnections + configuration.overflowConnections
        try setLong(CURLMOPT_MAX_HOST_CONNECTIONS, connections, "CURLMOPT_MAX_HOST_CONNECTIONS")
        try setLong(CURLMOPT_MAX_TOTAL_CONNECTIONS, connections, "CURLMOPT_MAX_TOTAL_CONNECTIONS")
        try setLong(
            CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maxConcurrentStreams, "CURLMOPT_MAX_CONCURRENT_STREAMS")
    }

    deinit {
        curl_multi_cleanup(raw)
    }

    private func setLong(_ option: CURLMoption, _ value: Int, _ name: String) throws(HTTP2ClientError) {
        try CurlResult.check(sb_curl_multi_setopt_long(raw, option, value), "curl_multi_setopt(\(name))")
    }
}
