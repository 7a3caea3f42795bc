internal import CNGHTTP2

/// A failed nghttp2 call: which call, its error code and nghttp2's own message for it.
struct NGHTTP2Error: Error, Sendable, CustomStringConvertible {
    let operation: String
    let code: Int
    let message: String

    var description: String { "\(operation): \(message) (\(code))" }
}

/// The one choke point where nghttp2 return codes become ``NGHTTP2Error``s.
enum NGHTTP2 {
    /// Returns `result` unless it is negative (nghttp2's failure values), then throws with
    /// `nghttp2_strerror`'s text.
    @discardableResult
    static func check<T: BinaryInteger>(_ result: T, _ operation: @autoclosure () -> String) throws(NGHTTP2Error) -> T {
        guard result < 0 else { return result }
        let code = Int32(truncatingIfNeeded: result)
        throw NGHTTP2Error(operation: operation(), code: Int(code), message: String(cString: nghttp2_strerror(code)))
    }
}

/// Owns one server-side `nghttp2_session` and frees it in `deinit`.
///
/// Not `Sendable`: it lives on the loop thread with the connection that owns it. The callbacks
/// reach that connection through `userData`, an unretained pointer the connection guarantees
/// outlives this session (the connection holds the session, never the other way round).
final class HTTP2ServerSession {
    let handle: OpaquePointer

    /// Creates a session whose callbacks receive `userData`, and queues the server's SETTINGS
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`); the caller installs callbacks through `configure`.
    init(
        userData: UnsafeMutableRawPointer, maxConcurrentStreams: UInt32,
        configure: (OpaquePointer) -> Void
    ) throws(NGHTTP2Error) {
        var callbacks: OpaquePointer?
        try NGHTTP2.check(nghttp2_session_callbacks_new(&callbacks), "nghttp2_session_callbacks_new")
        defer { nghttp2_session_callbacks_del(callbacks) }
        configure(callbacks!)
        var session: OpaquePointer?
        try NGHTTP2.check(nghttp2_session_server_new(&session, callbacks, userData), "nghttp2_session_server_new")
        handle = session!
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams)
        ]
        try NGHTTP2.check(
            nghttp2_submit_settings(handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count),
            "nghttp2_submit_settings")
    }

    deinit {
        nghttp2_session_del(handle)
    }

    /// Feeds received bytes; callbacks run inside this call.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(NGHTTP2Error) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let consumed = try NGHTTP2.check(
            nghttp2_session_mem_recv(handle, base.assumingMemoryBound(to: UInt8.self), bytes.count),
            "nghttp2_session_mem_recv")
        precondition(consumed == bytes.count, "nghttp2_session_mem_recv consumed part of its input")
    }

    /// The next serialized frames to send, valid until the next call into the session; empty
    /// when nothing is pending.
    func nextOutput() throws(NGHTTP2Error) -> UnsafeRawBufferPointer {
        var data: UnsafePointer<UInt8>?
        let count = try NGHTTP2.check(nghttp2_session_mem_send(handle, &data), "nghttp2_session_mem_send")
        guard count > 0, let data else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: data, count: count)
    }

    var wantsRead: Bool { nghttp2_session_want_read(handle) != 0 }
    var wantsWrite: Bool { nghttp2_session_want_write(handle) != 0 }

    /// Submits a response with `:status`, `headers` and (when `hasBody`) a body that
    /// `readBody` supplies.
    func submitResponse(
        streamID: Int32, status: Int, headers: [APNsHeader], hasBody: Bool, readBody: nghttp2_data_source_read_callback
    ) throws(NGHTTP2Error) {
        var fields = [(name: [UInt8], value: [UInt8])]()
        fields.append((Array(":status".utf8), Array(String(status).utf8)))
        for header in headers { fields.append((Array(header.name.utf8), Array(header.value.utf8))) }
        // nghttp2 copies the name/value pairs inside submit, so the pointers need only live
        // for the call.
        let result = withNameValuePairs(fields) { pairs in
            if hasBody {
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readBody)
                return nghttp2_submit_response(handle, streamID, pairs.baseAddress, pairs.count, &provider)
            }
            return nghttp2_submit_response(handle, streamID, pairs.baseAddress, pairs.count, nil)
        }
        try NGHTTP2.check(result, "nghttp2_submit_response")
    }

    /// Resets `streamID` with `errorCode` (for example `NGHTTP2_REFUSED_STREAM`).
    func submitReset(streamID: Int32, errorCode: UInt32) throws(NGHTTP2Error) {
        try NGHTTP2.check(
            nghttp2_submit_rst_stream(handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode),
            "nghttp2_submit_rst_stream")
    }

    /// Queues GOAWAY (`NO_ERROR`) naming `lastStreamID` as the last one processed, with
    /// `debugData` (APNs sends `{"reason":…}`).
    func submitGoaway(lastStreamID: Int32, debugData: [UInt8]) throws(NGHTTP2Error) {
        let result = debugData.withUnsafeBufferPointer { buffer in
            nghttp2_submit_goaway(
                handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, NGHTTP2_NO_ERROR.rawValue,
                buffer.baseAddress, buffer.count)
        }
        try NGHTTP2.check(result, "nghttp2_submit_goaway")
    }
}

/// Calls `body` with `nghttp2_nv` entries pointing into `fields`, valid for the call only.
func withNameValuePairs<R>(
    _ fields: [(name: [UInt8], value: [UInt8])], _ body: (UnsafeBufferPointer<nghttp2_nv>) -> R
) -> R {
    // One contiguous buffer holds every name and value; the nv entries point into it.
    var storage: [UInt8] = []
    storage.reserveCapacity(fields.reduce(0) { $0 + $1.name.count + $1.value.count })
    for field in fields {
        storage.append(contentsOf: field.name)
        storage.append(contentsOf: field.value)
    }
    return storage.withUnsafeMutableBufferPointer { bytes in
        var pairs: [nghttp2_nv] = []
        pairs.reserveCapacity(fields.count)
        var offset = 0
        for field in fields {
            let name = bytes.baseAddress! + offset
            let value = name + field.name.count
            offset += field.name.count + field.value.count
            pairs.append(
                nghttp2_nv(
                    name: name, value: value, namelen: field.name.count, valuelen: field.value.count,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
        }
        return pairs.withUnsafeBufferPointer(body)
    }
}
