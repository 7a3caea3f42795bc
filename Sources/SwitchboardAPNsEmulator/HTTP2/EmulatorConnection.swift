internal import CNGHTTP2

/// One HTTP/2 connection, on the loop thread only: its transport, its nghttp2 session, the
/// requests being received and the responses being sent.
///
/// nghttp2 calls back into this object (through an unretained `userData` pointer) while
/// `receive` and `flush` run; the callbacks only record what arrived, and the loop acts on
/// ``completedStreams`` afterwards, so no response is submitted from inside a callback.
final class EmulatorConnection {
    /// A request stream: what arrived so far and, once answered, the body being sent.
    struct Stream {
        var method = ""
        var path = ""
        var headers: [APNsHeader] = []
        var body: [UInt8] = []
        var bodyLength = 0
        var overflowed = false
        var response: [UInt8] = []
        var responseOffset = 0
    }

    let id: UInt64
    let transport: any ConnectionTransport
    private var session: HTTP2ServerSession!
    private var streams: [Int32: Stream] = [:]
    /// Streams whose request ended (END_STREAM), in order, not yet handed to the router.
    private(set) var completedStreams: [Int32] = []
    /// Bytes taken from nghttp2 that the socket has not accepted yet.
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    /// Push streams this connection has carried (for `goawayAfter`).
    var pushStreams = 0
    /// RST_STREAM frames the client sent and GOAWAY frames this side sent, not yet counted in
    /// the emulator's statistics (the loop takes them after each read and write).
    private(set) var uncounted = (resetsReceived: 0, goawaysSent: 0)
    /// The last stream processed before this connection's GOAWAY, once one is queued.
    private(set) var goawayLastStreamID: Int32?
    /// Once finished: when to give up waiting for the peer to close (monotonic nanoseconds).
    var lingerDeadline: UInt64?
    /// The largest request body kept per stream; the rest is counted only.
    private let bodyLimit: Int

    init(
        id: UInt64, transport: any ConnectionTransport, maxConcurrentStreams: UInt32, bodyLimit: Int
    ) throws(NGHTTP2Error) {
        self.id = id
        self.transport = transport
        self.bodyLimit = bodyLimit
        session = try HTTP2ServerSession(
            userData: Unmanaged.passUnretained(self).toOpaque(), maxConcurrentStreams: maxConcurrentStreams,
            configure: Self.installCallbacks)
    }

    // MARK: Loop entry points

    /// Feeds bytes read from the socket.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(NGHTTP2Error) {
        try session.receive(bytes)
    }

    /// Takes the frame counts since the last call.
    func takeFrameCounts() -> (resetsReceived: Int, goawaysSent: Int) {
        defer { uncounted = (0, 0) }
        return uncounted
    }

    /// Takes the streams whose requests are complete, in arrival order.
    func takeCompletedStreams() -> [Int32] {
        defer { completedStreams.removeAll(keepingCapacity: true) }
        return completedStreams
    }

    /// The request received on `streamID`, if the stream is still open.
    func request(_ streamID: Int32) -> EmulatorRequest? {
        guard let stream = streams[streamID] else { return nil }
        var request = EmulatorRequest(
            method: stream.method, path: stream.path, headers: stream.headers, body: stream.body,
            bodyOverflowed: stream.overflowed)
        request.bodyLength = stream.bodyLength
        return request
    }

    /// Whether `streamID` is still open (a delayed answer or a long poll still has somewhere to go).
    func isOpen(_ streamID: Int32) -> Bool { streams[streamID] != nil }

    /// Whether `streamID` arrived after this connection's GOAWAY and so must not be processed.
    func isBeyondGoaway(_ streamID: Int32) -> Bool {
        goawayLastStreamID.map { streamID > $0 } ?? false
    }

    /// Submits `response` on `streamID`.
    func respond(_ streamID: Int32, _ response: EmulatorResponse) throws(NGHTTP2Error) {
        guard streams[streamID] != nil else { return }
        streams[streamID]!.response = response.body
        streams[streamID]!.responseOffset = 0
        try session.submitResponse(
            streamID: streamID, status: response.status, headers: response.headers, hasBody: !response.body.isEmpty,
            readBody: Self.readBody)
    }

    /// Resets `streamID` with `REFUSED_STREAM`.
    func refuse(_ streamID: Int32) throws(NGHTTP2Error) {
        try session.submitReset(streamID: streamID, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
    }

    /// Queues GOAWAY naming `lastStreamID`, with `{"reason":…}` debug data; the connection
    /// closes once every stream up to it is answered and the output is flushed.
    func goaway(lastStreamID: Int32, reason: String) throws(NGHTTP2Error) {
        guard goawayLastStreamID == nil else { return }
        goawayLastStreamID = lastStreamID
        try session.submitGoaway(lastStreamID: lastStreamID, debugData: APNsRejection(status: 0, reason: reason).body)
    }

    /// Writes as much pending output as the socket takes; returns `false` when the socket failed.
    func flush() throws(NGHTTP2Error) -> Bool {
        while true {
            if pendingOffset < pending.count {
                let result = pending[pendingOffset...].withUnsafeBytes { transport.write($0) }
                switch result {
                case .transferred(let count):
                    pendingOffset += count
                    continue
                case .wouldBlock: return true
                case .closed, .failed: return false
                }
            }
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
            let output = try session.nextOutput()
            guard !output.isEmpty else { return true }
            switch transport.write(output) {
            case .transferred(let count):
                if count < output.count { pending.append(contentsOf: output[count...]) }
            case .wouldBlock:
                pending.append(contentsOf: output)
            case .closed, .failed:
                return false
            }
        }
    }

    /// Whether the loop should wait for the socket to become writable.
    var wantsWritable: Bool { pendingOffset < pending.count || transport.wantsWritable }

    /// Whether the connection is finished: nghttp2 wants nothing more, or a GOAWAY has gone
    /// out and every stream it covers is answered.
    var isFinished: Bool {
        guard pendingOffset >= pending.count, !session.wantsWrite else { return false }
        if !session.wantsRead { return true }
        if let last = goawayLastStreamID {
            return !streams.keys.contains { $0 <= last }
        }
        return false
    }

    // MARK: nghttp2 callbacks

    private static func connection(_ userData: UnsafeMutableRawPointer?) -> EmulatorConnection {
        Unmanaged<EmulatorConnection>.fromOpaque(userData!).takeUnretainedValue()
    }

    private static func installCallbacks(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
            else { return 0 }
            EmulatorConnection.connection(userData).streams[frame.pointee.hd.stream_id] = Stream()
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value else { return 0 }
            let connection = EmulatorConnection.connection(userData)
            let streamID = frame.pointee.hd.stream_id
            guard connection.streams[streamID] != nil else { return 0 }
            let field = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let text = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            switch field {
            case ":method": connection.streams[streamID]!.method = text
            case ":path": connection.streams[streamID]!.path = text
            case _ where field.hasPrefix(":"): break
            default: connection.streams[streamID]!.headers.append(APNsHeader(field, text))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            _, _, streamID, data, length, userData in
            let connection = EmulatorConnection.connection(userData)
            guard connection.streams[streamID] != nil, let data else { return 0 }
            connection.streams[streamID]!.bodyLength += length
            let room = connection.bodyLimit - connection.streams[streamID]!.body.count
            if length > room { connection.streams[streamID]!.overflowed = true }
            if room > 0 {
                connection.streams[streamID]!.body.append(
                    contentsOf: UnsafeBufferPointer(start: data, count: min(room, length)))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            let type = frame.pointee.hd.type
            if type == UInt8(NGHTTP2_RST_STREAM.rawValue) {
                EmulatorConnection.connection(userData).uncounted.resetsReceived += 1
                return 0
            }
            let endsStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            guard endsStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) else {
                return 0
            }
            let connection = EmulatorConnection.connection(userData)
            let streamID = frame.pointee.hd.stream_id
            if connection.streams[streamID] != nil { connection.completedStreams.append(streamID) }
            return 0
        }
        // Every GOAWAY this side sends: a fault's, and nghttp2's own (a protocol error, or its
        // rapid-reset guard after a burst of client RST_STREAMs, CVE-2023-44487).
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            if let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                EmulatorConnection.connection(userData).uncounted.goawaysSent += 1
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, userData in
            EmulatorConnection.connection(userData).streams[streamID] = nil
            return 0
        }
    }

    /// Supplies a response body to nghttp2 from the stream's `response` bytes.
    private static let readBody: nghttp2_data_source_read_callback = {
        _, streamID, buffer, length, dataFlags, _, userData in
        let connection = EmulatorConnection.connection(userData)
        guard let stream = connection.streams[streamID], let buffer, let dataFlags else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = min(length, stream.response.count - stream.responseOffset)
        stream.response.withUnsafeBytes { bytes in
            UnsafeMutableRawPointer(buffer).copyMemory(
                from: bytes.baseAddress! + stream.responseOffset, byteCount: count)
        }
        connection.streams[streamID]!.responseOffset += count
        if stream.responseOffset + count == stream.response.count {
            dataFlags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        }
        return count
    }
}
