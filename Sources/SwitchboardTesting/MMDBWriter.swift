import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds small MaxMind DB files (format 2.0) for tests: an IPv6 search tree, with IPv4
/// networks under ::/96 as the format lays them out, over a data section of maps, arrays,
/// strings, numbers and booleans.
///
/// ```swift
/// var writer = MMDBWriter()
/// try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
/// try writer.write(to: path)  // mmdblookup --file path --ip 81.2.69.160
/// ```
///
/// A network takes precedence over every broader one within its range, whichever was inserted
/// first; of two equal networks the later one wins.
public struct MMDBWriter: Sendable {
    /// A value of the data section.
    public enum Value: Sendable {
        /// A UTF-8 string (type 2).
        case string(String)
        /// An unsigned 32-bit integer (type 6), in as few bytes as it needs.
        case uint32(UInt32)
        /// An unsigned 16-bit integer (type 5), in as few bytes as it needs.
        case uint16(UInt16)
        /// An unsigned 64-bit integer (type 9), in as few bytes as it needs.
        case uint64(UInt64)
        /// An IEEE 754 double (type 3).
        case double(Double)
        /// A boolean (type 14).
        case bool(Bool)
        /// A map (type 7) of key–value pairs, written in the order given.
        case map([(String, Value)])
        /// An array (type 11).
        case array([Value])
    }

    /// A network in CIDR text that could not be used, and why.
    public struct InvalidNetwork: Error, Sendable, CustomStringConvertible {
        /// The text as given.
        public var text: String
        /// What is wrong with it.
        public var reason: String

        /// The text and the reason, for a test failure.
        public var description: String { "invalid network \"\(text)\": \(reason)" }
    }

    /// The metadata's `database_type`.
    public let databaseType: String
    /// Bits per search-tree record: 24, 28 or 32.
    public let recordSize: Int
    /// The metadata's `build_epoch`, in seconds since 1970 (2023-11-14 unless set, so that the
    /// same inserts give the same bytes); libmaxminddb rejects 0.
    public var buildEpoch: UInt64 = 1_700_000_000

    /// One side of a search-tree node.
    private enum Record: Sendable {
        /// No network covers this range.
        case empty
        /// The index of the node below.
        case node(Int)
        /// The index of a value in `values`, and the prefix length of the network it was
        /// inserted for (in the 128-bit tree), so that a broader network never replaces it.
        case data(Int, prefixLength: Int)
    }

    private struct Node: Sendable {
        var records: [Record]
    }

    /// Node 0 is the root, so there is always at least one node.
    private var nodes = [Node(records: [.empty, .empty])]
    private var values: [Value] = []

    /// A writer of an empty database of the given type and record size (24, 28 or 32 bits).
    public init(databaseType: String = "Switchboard-Test-City", recordSize: Int = 24) {
        precondition([24, 28, 32].contains(recordSize), "record size must be 24, 28 or 32 bits, not \(recordSize)")
        self.databaseType = databaseType
        self.recordSize = recordSize
    }

    /// Maps every address in `network` to `value`, where no more specific network says
    /// otherwise.
    ///
    /// `network` is CIDR text, "81.2.69.0/24" or "2001:480::/32", with no bits set after the
    /// prefix; throws ``InvalidNetwork`` for anything else.
    public mutating func insert(network: String, value: Value) throws {
        let (address, prefixLength) = try Self.parse(network: network)
        values.append(value)
        let record = Record.data(values.count - 1, prefixLength: prefixLength)
        guard prefixLength > 0 else {
            place(record, node: 0, side: 0)
            place(record, node: 0, side: 1)
            return
        }
        var node = 0
        for depth in 0..<(prefixLength - 1) {
            let side = Self.bit(depth, of: address)
            switch nodes[node].records[side] {
            case .node(let next):
                node = next
            case let covering:
                // Split: the new node's halves keep whatever covered the whole range.
                nodes.append(Node(records: [covering, covering]))
                nodes[node].records[side] = .node(nodes.count - 1)
                node = nodes.count - 1
            }
        }
        place(record, node: node, side: Self.bit(prefixLength - 1, of: address))
    }

    /// Maps `network` to a GeoIP2-City-shaped entry, `{"city": {"names": {"en": city}},
    /// "country": {"iso_code": countryCode}}`, leaving out the parts that are nil (both nil
    /// gives an empty map).
    public mutating func insertCity(network: String, city: String?, countryCode: String?) throws {
        var entry: [(String, Value)] = []
        if let city { entry.append(("city", .map([("names", .map([("en", .string(city))]))]))) }
        if let countryCode { entry.append(("country", .map([("iso_code", .string(countryCode))]))) }
        try insert(network: network, value: .map(entry))
    }

    /// The whole file: search tree, 16 zero bytes, data section, metadata marker, metadata.
    public func bytes() -> [UInt8] {
        var data: [UInt8] = []
        var offsets: [Int] = []
        var offsetOfEncoding: [[UInt8]: Int] = [:]
        for value in values {
            var encoded: [UInt8] = []
            Self.encode(value, into: &encoded)
            if let offset = offsetOfEncoding[encoded] {
                offsets.append(offset)
            } else {
                offsetOfEncoding[encoded] = data.count
                offsets.append(data.count)
                data += encoded
            }
        }

        // libmaxminddb rejects a data section under 3 bytes; pad with unused empty maps.
        while data.count < 3 { Self.encode(.map([]), into: &data) }

        let nodeCount = nodes.count
        func number(_ record: Record) -> UInt64 {
            switch record {
            case .empty: return UInt64(nodeCount)
            case .node(let index): return UInt64(index)
            case .data(let index, _): return UInt64(nodeCount + 16 + offsets[index])
            }
        }
        precondition(buildEpoch > 0, "libmaxminddb rejects a build epoch of 0")
        var file: [UInt8] = []
        file.reserveCapacity(nodeCount * recordSize / 4 + 16 + data.count + 256)
        for node in nodes {
            let left = number(node.records[0])
            let right = number(node.records[1])
            precondition(max(left, right) >> recordSize == 0, "the database is too large for \(recordSize)-bit records")
            switch recordSize {
            case 24:
                Self.appendBigEndian(left, count: 3, to: &file)
                Self.appendBigEndian(right, count: 3, to: &file)
            case 28:
                // The middle byte holds bits 24–27 of the left record high, of the right low.
                Self.appendBigEndian(left & 0xff_ffff, count: 3, to: &file)
                file.append(UInt8(left >> 24) << 4 | UInt8(right >> 24))
                Self.appendBigEndian(right & 0xff_ffff, count: 3, to: &file)
            default:
                Self.appendBigEndian(left, count: 4, to: &file)
                Self.appendBigEndian(right, count: 4, to: &file)
            }
        }
        file += [UInt8](repeating: 0, count: 16)
        file += data
        file += [0xAB, 0xCD, 0xEF] + Array("MaxMind.com".utf8)
        let metadata: Value = .map([
            ("node_count", .uint32(UInt32(nodeCount))),
            ("record_size", .uint16(UInt16(recordSize))),
            ("ip_version", .uint16(6)),
            ("database_type", .string(databaseType)),
            ("languages", .array([.string("en")])),
            ("binary_format_major_version", .uint16(2)),
            ("binary_format_minor_version", .uint16(0)),
            ("build_epoch", .uint64(buildEpoch)),
            ("description", .map([("en", .string("Switchboard test database"))])),
        ])
        Self.encode(metadata, into: &file)
        return file
    }

    /// Writes ``bytes()`` to the file at `path`, replacing it.
    public func write(to path: String) throws {
        try Data(bytes()).write(to: URL(fileURLWithPath: path))
    }

    /// Puts `record` on one side of `node`: over an empty range or one held by a network no
    /// more specific, and, where a subtree holds more specific networks, into the gaps of
    /// that subtree that broader ones held.
    private mutating func place(_ record: Record, node: Int, side: Int) {
        guard case .data(_, let prefixLength) = record else { return }
        switch nodes[node].records[side] {
        case .node(let child):
            place(record, node: child, side: 0)
            place(record, node: child, side: 1)
        case .data(_, let existing) where existing > prefixLength:
            break
        case .empty, .data:
            nodes[node].records[side] = record
        }
    }

    // MARK: - Network text

    /// The network's 16 address bytes (IPv4 under ::/96) and prefix length in the 128-bit tree.
    private static func parse(network text: String) throws(InvalidNetwork) -> (address: [UInt8], prefixLength: Int) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw InvalidNetwork(text: text, reason: "expected address/prefix-length") }
        let lengthText = parts[1]
        guard !lengthText.isEmpty, lengthText.count <= 3, lengthText.allSatisfy({ ("0"..."9").contains($0) }),
            let length = Int(lengthText)
        else { throw InvalidNetwork(text: text, reason: "the prefix length is not a number") }
        let addressText = String(parts[0])
        guard !addressText.utf8.contains(0) else {
            throw InvalidNetwork(text: text, reason: "the address contains a NUL byte")
        }

        var address: [UInt8]
        var prefixLength: Int
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, addressText, &v4) == 1 {
            guard length <= 32 else { throw InvalidNetwork(text: text, reason: "an IPv4 prefix length is at most 32") }
            address = [UInt8](repeating: 0, count: 12) + withUnsafeBytes(of: v4) { Array($0) }
            prefixLength = 96 + length
        } else if inet_pton(AF_INET6, addressText, &v6) == 1 {
            guard length <= 128 else {
                throw InvalidNetwork(text: text, reason: "an IPv6 prefix length is at most 128")
            }
            address = withUnsafeBytes(of: v6) { Array($0) }
            prefixLength = length
        } else {
            throw InvalidNetwork(text: text, reason: "not an IPv4 or IPv6 address")
        }
        guard (prefixLength..<128).allSatisfy({ bit($0, of: address) == 0 }) else {
            throw InvalidNetwork(text: text, reason: "bits are set after the prefix")
        }
        return (address, prefixLength)
    }

    /// Bit `index` of `address`, counting from the most significant bit of the first byte.
    private static func bit(_ index: Int, of address: [UInt8]) -> Int {
        Int(address[index / 8] >> (7 - index % 8) & 1)
    }

    // MARK: - Data section

    private static func encode(_ value: Value, into out: inout [UInt8]) {
        switch value {
        case .string(let text):
            let utf8 = Array(text.utf8)
            appendControl(type: 2, size: utf8.count, to: &out)
            out += utf8
        case .double(let number):
            appendControl(type: 3, size: 8, to: &out)
            appendBigEndian(number.bitPattern, count: 8, to: &out)
        case .uint16(let number):
            appendUnsigned(UInt64(number), type: 5, to: &out)
        case .uint32(let number):
            appendUnsigned(UInt64(number), type: 6, to: &out)
        case .map(let pairs):
            appendControl(type: 7, size: pairs.count, to: &out)
            for (key, value) in pairs {
                encode(.string(key), into: &out)
                encode(value, into: &out)
            }
        case .uint64(let number):
            appendUnsigned(number, type: 9, to: &out)
        case .array(let elements):
            appendControl(type: 11, size: elements.count, to: &out)
            for element in elements { encode(element, into: &out) }
        case .bool(let flag):
            // A boolean's value is its size field; it has no payload.
            appendControl(type: 14, size: flag ? 1 : 0, to: &out)
        }
    }

    /// An unsigned integer in as few big-endian bytes as it needs (zero takes none).
    private static func appendUnsigned(_ number: UInt64, type: Int, to out: inout [UInt8]) {
        let count = (UInt64.bitWidth - number.leadingZeroBitCount + 7) / 8
        appendControl(type: type, size: count, to: &out)
        appendBigEndian(number, count: count, to: &out)
    }

    /// The control byte: type in the top 3 bits (0 and an extra byte of type − 7 for types
    /// above 7), then the size, inline below 29 or in 1–3 following bytes.
    private static func appendControl(type: Int, size: Int, to out: inout [UInt8]) {
        let sizeField: UInt8
        let sizeBytes: [UInt8]
        switch size {
        case ..<29:
            sizeField = UInt8(size)
            sizeBytes = []
        case ..<285:
            sizeField = 29
            sizeBytes = [UInt8(size - 29)]
        case ..<65_821:
            sizeField = 30
            sizeBytes = bigEndian(UInt64(size - 285), count: 2)
        default:
            precondition(size - 65_821 < 1 << 24, "a value of \(size) bytes or elements is too large for the format")
            sizeField = 31
            sizeBytes = bigEndian(UInt64(size - 65_821), count: 3)
        }
        if type <= 7 {
            out.append(UInt8(type) << 5 | sizeField)
        } else {
            out.append(sizeField)
            out.append(UInt8(type - 7))
        }
        out += sizeBytes
    }

    private static func appendBigEndian(_ number: UInt64, count: Int, to out: inout [UInt8]) {
        out += bigEndian(number, count: count)
    }

    private static func bigEndian(_ number: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: number >> (8 * (count - 1 - $0))) }
    }
}
