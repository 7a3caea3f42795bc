import CCurl

/// The one place where libcurl return codes become ``HTTP2ClientError``s (house rule: one choke point per library).
enum CurlResult {
    /// Throws unless an easy-handle call (setopt, getinfo) succeeded.
    static func check(_ code: CURLcode, _ operation: @autoclosure () -> String) throws(HTTP2ClientError) {
        guard code != CURLE_OK else { return }
        throw error(for: code, detail: "\(operation()): \(message(code))")
    }

    /// Throws unless a multi-handle call succeeded.
    static func check(_ code: CURLMcode, _ operation: @autoclosure () -> String) throws(HTTP2ClientError) {
        guard code != CURLM_OK else { return }
        throw .protocolError("\(operation()): \(message(code))")
    }

    /// libcurl's own text for an easy-handle code.
    static func message(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }

    /// libcurl's own text for a multi-handle code.
    static func message(_ code: CURLMcode) -> String {
        String(cString: curl_multi_strerror(code))
    }

    /// Maps the result of a finished transfer (or a failed setopt) to the public error.
    ///
    /// `detail` is the transfer's CURLOPT_ERRORBUFFER text when libcurl wrote one, else `curl_easy_strerror`.
    static func error(for code: CURLcode, detail: String) -> HTTP2ClientError {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY,
            CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
            CURLE_GOT_NOTHING, CURLE_ABORTED_BY_CALLBACK, CURLE_NO_CONNECTION_AVAILABLE,
            // The stream ended before a complete response: the connection was lost or closed (GOAWAY), or the
            // server reset the stream; either way nothing usable came back and the request may be retried.
            CURLE_HTTP2_STREAM, CURLE_PARTIAL_FILE:
            return .connectionFailed(detail)
        case CURLE_URL_MALFORMAT, CURLE_BAD_FUNCTION_ARGUMENT, CURLE_UNSUPPORTED_PROTOCOL,
            CURLE_UNKNOWN_OPTION, CURLE_NOT_BUILT_IN:
            return .invalidRequest(detail)
        default:
            // CURLE_HTTP2 (framing layer), CURLE_WEIRD_SERVER_REPLY, CURLE_WRITE_ERROR, CURLE_OUT_OF_MEMORY, ...
            return .protocolError(detail)
        }
    }

    /// Whether a failed transfer says the connection (not just this request) is in trouble, so the client must
    /// back off before it connects again. `requestWasSent` is false when no connection was ever ready for it.
    static func isConnectionLevel(_ code: CURLcode, requestWasSent: Bool) -> Bool {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY,
            CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_PARTIAL_FILE, CURLE_NO_CONNECTION_AVAILABLE:
            return true
        case CURLE_OPERATION_TIMEDOUT:
            // A deadline that passed while connecting is a connection problem; one that passed while the
            // server was answering is the server's slowness on one stream.
            return !requestWasSent
        default:
            return false
        }
    }
}
