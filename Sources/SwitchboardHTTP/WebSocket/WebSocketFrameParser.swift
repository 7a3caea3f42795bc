// RFC 6455 framing, both ways. Pure Swift with no imports, so the fuzz target compiles it alone.

/// A frame's opcode (RFC 6455 §5.2). Other values are a protocol error.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes, never fragmented, allowed between fragments.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// One frame, unmasked.
public struct WebSocketFrame: Sendable, Equatable {
    /// Whether this is the last frame of its message.
    public var fin: Bool
    /// What the frame carries.
    public var opcode: WebSocketOpcode
    /// The payload, already unmasked.
    public var payload: [UInt8]

    /// Creates a frame.
    public init(fin: Bool = true, opcode: WebSocketOpcode, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }
}

/// Which end of the connection this is: a server reads masked frames and writes unmasked ones,
/// a client the other way round (RFC 6455 §5.1).
public enum WebSocketRole: Sendable {
    case server
    case client
}

/// Close status codes this implementation sends (RFC 6455 §7.4.1).
public enum WebSocketCloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let protocolError: UInt16 = 1002
    public static let unsupportedData: UInt16 = 1003
    /// Never sent: reported when a connection ended without a close frame.
    public static let abnormal: UInt16 = 1006
    public static let invalidPayload: UInt16 = 1007
    public static let policyViolation: UInt16 = 1008
    public static let messageTooBig: UInt16 = 1009
    public static let internalError: UInt16 = 1011

    /// Whether a peer may send `code` in a close frame: 1000–1003, 1007–1014 (1012–1014 are
    /// registered with IANA: service restart, try again later, bad gateway) and the
    /// registered/private ranges 3000–4999; 1004–1006, 1015 and the rest are protocol errors.
    public static func isValidOnTheWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}

/// A framing error: the connection fails with `code`.
public struct WebSocketFailure: Error, Sendable, Equatable {
    /// The close code to send.
    public var code: UInt16
    /// Why, for the close frame's reason and logs.
    public var reason: String

    public init(code: UInt16, reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// Turns received bytes into frames, one at a time, with a hard limit on a frame's payload.
///
/// ```swift
/// var parser = WebSocketFrameParser(role: .server, maxFrameBytes: 65536)
/// parser.append(bytes)
/// while case .frame(let frame) = parser.next() { ... }
/// ```
public struct WebSocketFrameParser: Sendable {
    /// What `next()` found.
    public enum Step: Sendable, Equatable {
        case needMoreData
        case frame(WebSocketFrame)
        /// The stream is broken; every later call answers the same.
        case failed(WebSocketFailure)
    }

    public let role: WebSocketRole
    public let maxFrameBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: WebSocketFailure?

    public init(role: WebSocketRole, maxFrameBytes: Int) {
        self.role = role
        self.maxFrameBytes = maxFrameBytes
    }

    /// Bytes received and not yet consumed by a complete frame.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Appends received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }

    /// The next complete frame, if the buffered bytes hold one.
    public mutating func next() -> Step {
        if let failure { return .failed(failure) }
        let available = buffer.count - start
        guard available >= 2 else { return .needMoreData }
        let first = buffer[start], second = buffer[start + 1]
        if first & 0x70 != 0 { return fail(WebSocketCloseCode.protocolError, "reserved bits set without an extension") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            return fail(WebSocketCloseCode.protocolError, "unknown opcode \(first & 0x0F)")
        }
        let fin = first & 0x80 != 0
        let masked = second & 0x80 != 0
        switch role {
        case .server where !masked: return fail(WebSocketCloseCode.protocolError, "a client's frames must be masked")
        case .client where masked: return fail(WebSocketCloseCode.protocolError, "a server's frames must not be masked")
        default: break
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return .needMoreData }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return .needMoreData }
            length = 0
            for index in 2..<10 { length = length << 8 | UInt64(buffer[start + index]) }
            if length >> 63 != 0 { return fail(WebSocketCloseCode.protocolError, "frame length has its top bit set") }
            headerLength = 10
        }
        if opcode.isControl {
            if !fin { return fail(WebSocketCloseCode.protocolError, "a control frame must not be fragmented") }
            if length > 125 {
                return fail(WebSocketCloseCode.protocolError, "a control frame carries at most 125 bytes")
            }
        }
        if length > UInt64(maxFrameBytes) {
            return fail(
                WebSocketCloseCode.messageTooBig, "frame of \(length) bytes is over the limit of \(maxFrameBytes)")
        }
        let payloadLength = Int(length)
        let maskOffset = start + headerLength
        let payloadOffset = maskOffset + (masked ? 4 : 0)
        guard buffer.count - payloadOffset >= payloadLength else { return .needMoreData }
        var payload = Array(buffer[payloadOffset..<(payloadOffset + payloadLength)])
        if masked {
            let key = (buffer[maskOffset], buffer[maskOffset + 1], buffer[maskOffset + 2], buffer[maskOffset + 3])
            WebSocketMask.apply((key.0, key.1, key.2, key.3), to: &payload)
        }
        start = payloadOffset + payloadLength
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            start = 0
        }
        return .frame(WebSocketFrame(fin: fin, opcode: opcode, payload: payload))
    }

    private mutating func fail(_ code: UInt16, _ reason: String) -> Step {
        let failure = WebSocketFailure(code: code, reason: reason)
        self.failure = failure
        buffer = []
        start = 0
        return .failed(failure)
    }
}

/// The XOR mask of RFC 6455 §5.3 (its own inverse).
public enum WebSocketMask {
    public static func apply(_ key: (UInt8, UInt8, UInt8, UInt8), to bytes: inout [UInt8]) {
        let keys = [key.0, key.1, key.2, key.3]
        bytes.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] ^= keys[index & 3] }
        }
    }
}

/// Serialises frames: unmasked for a server, masked with the given key for a client.
public enum WebSocketFrameEncoder {
    /// The bytes of one frame. `maskKey` must be set exactly when the sender is a client.
    public static func encode(_ frame: WebSocketFrame, maskKey: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        let count = frame.payload.count
        var output: [UInt8] = []
        output.reserveCapacity(count + 14)
        output.append((frame.fin ? 0x80 : 0) | frame.opcode.rawValue)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        if count < 126 {
            output.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            output.append(maskBit | 126)
            output.append(UInt8(count >> 8))
            output.append(UInt8(count & 0xFF))
        } else {
            output.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                output.append(UInt8((UInt64(count) >> UInt64(shift)) & 0xFF))
            }
        }
        if let maskKey {
            output.append(contentsOf: [maskKey.0, maskKey.1, maskKey.2, maskKey.3])
            var masked = frame.payload
            WebSocketMask.apply(maskKey, to: &masked)
            output.append(contentsOf: masked)
        } else {
            output.append(contentsOf: frame.payload)
        }
        return output
    }

    /// A close frame's payload: the code, big-endian, then the reason in UTF-8, cut to fit 125 bytes.
    public static func closePayload(code: UInt16, reason: String) -> [UInt8] {
        var payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var reasonBytes = Array(reason.utf8)
        if reasonBytes.count > 123 {
            reasonBytes = Array(reasonBytes[0..<123])
            // Never cut inside a UTF-8 sequence: a last character left incomplete goes whole.
            var lead = reasonBytes.count - 1
            while lead > 0, reasonBytes[lead] & 0xC0 == 0x80 { lead -= 1 }
            let byte = reasonBytes[lead]
            let width = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
            if lead + width > reasonBytes.count { reasonBytes.removeSubrange(lead...) }
        }
        payload.append(contentsOf: reasonBytes)
        return payload
    }
}
