import Foundation

// The push relay's protocol, one TCP connection per phone:
//
//   phone → relay, once, first:   <token> <after>\n
//       token   the VoIP device token in hex (1...200 hex digits, any case)
//       after   a decimal inbox index ≥ 0: the relay streams the pushes with a higher index
//               ("<token>\n" alone means after 0: every push the inbox still holds)
//       A line that is malformed or longer than 512 bytes, or none within 30 s, closes the
//       connection without an answer. Bytes after the line are read and ignored.
//
//   relay → phone, per push, in inbox order:   LENGTH JSON
//       LENGTH  4 bytes, big-endian: the byte count of JSON (at most 1 MiB)
//       JSON    {"index":N,"receivedAtMs":T,"payload":{…}}
//               index: the emulator's inbox index (1, 2, …), receivedAtMs: when the emulator
//               accepted the push (ms since 1970), payload: the push's JSON object verbatim
//
// A phone that reconnects sends the highest index it has received as `after`, so nothing is
// lost or repeated across connections.

/// The line a phone sends first: `<token> <after>`.
public struct PushRelayRequest: Sendable, Equatable {
    /// The longest line accepted, newline excluded.
    public static let maximumLength = 512

    /// The device token, lower-case hex.
    public var token: String
    /// Stream the pushes with an inbox index above this.
    public var after: Int

    /// Creates a request.
    public init(token: String, after: Int = 0) {
        self.token = token.lowercased()
        self.after = after
    }

    /// Parses a line without its newline; `nil` when malformed.
    public init?(line: String) {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let token = parts.first, (1...200).contains(token.count),
            token.allSatisfy(\.isHexDigit), token.allSatisfy(\.isASCII)
        else { return nil }
        var after = 0
        if parts.count == 2 {
            guard let number = Int(parts[1]), number >= 0 else { return nil }
            after = number
        }
        self.init(token: String(token), after: after)
    }

    /// The line to send, with its newline.
    public var line: String { "\(token) \(after)\n" }
}

/// One relayed push as the phone received it.
public struct RelayedPush: Sendable, Equatable {
    /// The emulator's inbox index.
    public var index: Int
    /// When the emulator accepted the push, in milliseconds since 1970.
    public var receivedAtMs: Int64
    /// When the frame was read off the phone's connection.
    public var deliveredAt: Date
    /// The push's JSON payload.
    public var payload: Data
}

/// The relay's frames: a 4-byte big-endian length, then JSON.
public enum PushRelayFrame {
    /// The largest frame body accepted.
    public static let maximumLength = 1 << 20

    /// A frame for one push; `payload` is a JSON object (the emulator only accepts those).
    public static func encode(index: Int, receivedAtMs: Int64, payload: [UInt8]) -> [UInt8] {
        let body =
            Array(#"{"index":\#(index),"receivedAtMs":\#(receivedAtMs),"payload":"#.utf8) + payload + [
                UInt8(ascii: "}")
            ]
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    /// Collects bytes as they arrive and hands out whole frame bodies.
    public struct Decoder: Sendable {
        private var buffer: [UInt8] = []
        private var offset = 0

        /// Creates an empty decoder.
        public init() {}

        /// Adds bytes read from the connection.
        public mutating func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
            if offset > 0, offset == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                offset = 0
            }
            buffer.append(contentsOf: bytes)
        }

        /// The next whole frame body, `nil` until one is complete; throws on a length over
        /// ``maximumLength`` (the stream is then unusable).
        public mutating func next() throws(PushRelayError) -> [UInt8]? {
            guard buffer.count - offset >= 4 else { return nil }
            let length = buffer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= maximumLength else {
                throw PushRelayError(
                    .badFrame, "a relay frame of \(length) bytes (more than \(maximumLength)): not a push relay")
            }
            guard buffer.count - offset - 4 >= length else { return nil }
            let body = Array(buffer[offset + 4..<offset + 4 + length])
            offset += 4 + length
            if offset > 65536 {
                buffer.removeFirst(offset)
                offset = 0
            }
            return body
        }
    }

    /// Reads a frame body; `nil` when it is not a push frame.
    public static func decode(_ body: [UInt8], deliveredAt: Date) -> RelayedPush? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let index = (object["index"] as? NSNumber)?.intValue,
            let receivedAt = (object["receivedAtMs"] as? NSNumber)?.int64Value,
            let payload = object["payload"] as? [String: Any],
            let data = try? JSONSerialization.data(withJSONObject: payload)
        else { return nil }
        return RelayedPush(index: index, receivedAtMs: receivedAt, deliveredAt: deliveredAt, payload: data)
    }
}
