import CNGHTTP2
import Foundation
import Glibc
import SwitchboardTesting
import SwitchboardPOSIX

/// One request for ``HTTP2TestClient``.
struct TestRequest: Sendable {
    var method: String
    var path: String
    /// Sent in this order; duplicates are sent as given.
    var headers: [(String, String)]
    var body: [UInt8]?

    init(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// What became of one request.
struct TestResponse: Sendable {
    var streamID: Int32 = 0
    var status: Int?
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    /// The RST_STREAM error code if the stream was reset (7 is REFUSED_STREAM), or the code
    /// nghttp2 closed it with when the server's GOAWAY did not cover it.
    var closeErrorCode: UInt32?
    /// Whether the stream ended at all before the client's deadline.
    var finished = false
    /// Seconds from the start of the exchange until the stream ended.
    var elapsed: Double?

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    /// The `reason` member of a JSON error body.
    var reason: String? {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["reason"] as? String
    }

    /// The body as a JSON object.
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

/// The outcome of ``HTTP2TestClient/exchange(_:timeout:)``.
struct TestExchange: Sendable {
    var responses: [TestResponse]
    /// The server's GOAWAY: last stream id, error code, debug data.
    var goaway: (lastStreamID: Int32, errorCode: UInt32, debugData: String)?
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    var maxConcurrentStreams: UInt32
    /// Whether the server closed the connection.
    var closedByServer: Bool
}

/// A minimal blocking HTTP/2 client over nghttp2 (h2c with prior knowledge), independent of
/// the emulator's server code, for tests only. Use it on one thread (see ``offPool(_:)``).
///
/// Requests that outlive the exchange's deadline are reset with CANCEL, as a client with a
/// deadline would do.
final class HTTP2TestClient {
    private let fd: Int32
    private var session: OpaquePointer!
    private var responses: [Int32: TestResponse] = [:]
    private var bodies: [Int32: (bytes: [UInt8], offset: Int)] = [:]
    private var goaway: (Int32, UInt32, String)?
    private var closedByServer = false
    private var started = monotonicSeconds()

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw TestClientError("connect to port \(port) failed: errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))

        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks!)
        var created: OpaquePointer?
        guard nghttp2_session_client_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0 else {
            close(fd)
            throw TestClientError("nghttp2_session_client_new failed")
        }
        session = created
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil, 0)
    }

    deinit {
        nghttp2_session_del(session)
        close(fd)
    }

    /// Sends every request at once (nghttp2 queues those beyond the server's stream limit) and
    /// waits until each has ended, the server closed the connection, or `timeout` passed.
    func exchange(_ requests: [TestRequest], timeout: Double = generousWait) throws -> TestExchange {
        started = monotonicSeconds()
        var order: [Int32] = []
        for request in requests {
            var fields: [(String, String)] = [
                (":method", request.method), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", request.path),
            ]
            fields += request.headers
            let streamID = submit(fields, hasBody: request.body != nil)
            guard streamID > 0 else { throw TestClientError("nghttp2_submit_request failed: \(streamID)") }
            if let body = request.body { bodies[streamID] = (body, 0) }
            responses[streamID] = TestResponse(streamID: streamID)
            order.append(streamID)
        }
        let deadline = started + timeout
        while order.contains(where: { responses[$0]?.finished == false }), !closedByServer {
            try pump(until: deadline)
            if monotonicSeconds() >= deadline { break }
        }
        let outcome = order.map { responses[$0]! }
        // A client with a deadline gives up on what is still open.
        for streamID in order where responses[streamID]?.finished == false {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
        }
        try? writePending()
        let maxStreams = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return TestExchange(
            responses: outcome,
            goaway: goaway.map { (lastStreamID: $0.0, errorCode: $0.1, debugData: $0.2) },
            maxConcurrentStreams: maxStreams, closedByServer: closedByServer)
    }

    private func submit(_ fields: [(String, String)], hasBody: Bool) -> Int32 {
        let encoded = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var storage: [UInt8] = encoded.flatMap { $0.0 + $0.1 }
        return storage.withUnsafeMutableBufferPointer { bytes in
            var offset = 0
            var pairs: [nghttp2_nv] = []
            for (name, value) in encoded {
                let namePointer = bytes.baseAddress! + offset
                pairs.append(
                    nghttp2_nv(
                        name: namePointer, value: namePointer + name.count, namelen: name.count,
                        valuelen: value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                offset += name.count + value.count
            }
            if hasBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: Self.readBody)
                return nghttp2_submit_request(session, nil, pairs, pairs.count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, pairs, pairs.count, nil, nil)
        }
    }

    /// Writes what nghttp2 has queued, then waits up to `deadline` for bytes and feeds them.
    private func pump(until deadline: Double) throws {
        try writePending()
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let wait = max(0, min(200, Int32((deadline - monotonicSeconds()) * 1000)))
        guard poll(&poller, 1, wait) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 {
            closedByServer = true
            return
        }
        let consumed = nghttp2_session_mem_recv(session, buffer, count)
        guard consumed == count else { throw TestClientError("nghttp2_session_mem_recv failed: \(consumed)") }
        try writePending()
    }

    private func writePending() throws {
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count >= 0 else { throw TestClientError("nghttp2_session_mem_send failed: \(count)") }
            guard count > 0, let data else { return }
            var offset = 0
            while offset < count {
                let written = send(fd, data + offset, count - offset, Int32(MSG_NOSIGNAL))
                guard written > 0 else {
                    closedByServer = true
                    return
                }
                offset += written
            }
        }
    }

    // MARK: Callbacks

    private static func client(_ userData: UnsafeMutableRawPointer?) -> HTTP2TestClient {
        Unmanaged<HTTP2TestClient>.fromOpaque(userData!).takeUnretainedValue()
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            let client = HTTP2TestClient.client(userData)
            let streamID = frame!.pointee.hd.stream_id
            guard client.responses[streamID] != nil else { return 0 }
            let field = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let text = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            if field == ":status" {
                client.responses[streamID]!.status = Int(text)
            } else {
                client.responses[streamID]!.headers.append((field, text))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            let client = HTTP2TestClient.client(userData)
            guard client.responses[streamID] != nil, let data else { return 0 }
            client.responses[streamID]!.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            let client = HTTP2TestClient.client(userData)
            guard client.responses[streamID] != nil else { return 0 }
            if errorCode != 0 { client.responses[streamID]!.closeErrorCode = errorCode }
            client.responses[streamID]!.finished = true
            client.responses[streamID]!.elapsed = monotonicSeconds() - client.started
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
            let goaway = frame.pointee.goaway
            let debug =
                goaway.opaque_data.map {
                    String(decoding: UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len), as: UTF8.self)
                } ?? ""
            HTTP2TestClient.client(userData).goaway = (goaway.last_stream_id, goaway.error_code, debug)
            return 0
        }
    }

    private static let readBody: nghttp2_data_source_read_callback = {
        _, streamID, buffer, length, flags, _, userData in
        let client = HTTP2TestClient.client(userData)
        guard let body = client.bodies[streamID] else {
            flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(length, body.bytes.count - body.offset)
        body.bytes.withUnsafeBytes { bytes in
            if count > 0 {
                UnsafeMutableRawPointer(buffer!).copyMemory(from: bytes.baseAddress! + body.offset, byteCount: count)
            }
        }
        client.bodies[streamID]!.offset += count
        if body.offset + count == body.bytes.count { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}

struct TestClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Seconds on the monotonic clock.

/// One exchange on a new connection to `port`, on a thread of its own.
func exchange(port: Int, _ requests: [TestRequest], timeout: Double = generousWait) async throws -> TestExchange {
    try await offPool {
        let client = try HTTP2TestClient(port: port)
        return try client.exchange(requests, timeout: timeout)
    }
}
