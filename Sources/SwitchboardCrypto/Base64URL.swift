/// The URL- and filename-safe base64 alphabet of RFC 4648 §5 (`-` and `_` instead of `+` and `/`).
///
/// Encoding never pads; decoding accepts input with or without correct `=` padding:
/// ```swift
/// Base64URL.encode([0xFB, 0xFF])      // "-_8"
/// Base64URL.decode("-_8")             // [0xFB, 0xFF]
/// Base64URL.decode("-_8=")            // [0xFB, 0xFF]
/// Base64URL.decode("+/8")             // nil: standard-alphabet characters are rejected
/// ```
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value, or `invalid`.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    private static let invalid: UInt8 = 0xFF

    /// Encodes `bytes` as base64url without `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            append(group, characters: 4, to: &output)
            index += 3
        }
        switch input.count - index {
        case 1:
            append(UInt32(input[index]) << 16, characters: 2, to: &output)
        case 2:
            append(UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8, characters: 3, to: &output)
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base64url `text`, or returns `nil` if it is not valid.
    ///
    /// Padding is optional, but if present it must be correct. Anything outside the base64url
    /// alphabet (including whitespace, `+` and `/`), an impossible length, and non-zero unused
    /// bits in the last character are rejected, so every byte string has exactly one unpadded
    /// encoding that decodes to it.
    public static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        if characters.count % 4 == 0, characters.last == UInt8(ascii: "=") {
            characters.removeLast()
            if characters.last == UInt8(ascii: "=") { characters.removeLast() }
            // Padding may only complete a final group of 2 or 3 characters.
            guard characters.count % 4 >= 2 else { return nil }
        }
        let remainder = characters.count % 4
        guard remainder != 1 else { return nil }

        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var index = 0
        while index < characters.count {
            let groupLength = Swift.min(4, characters.count - index)
            var group: UInt32 = 0
            for offset in 0..<4 {
                var value: UInt8 = 0
                if offset < groupLength {
                    value = values[Int(characters[index + offset])]
                    guard value != invalid else { return nil }
                }
                group = group << 6 | UInt32(value)
            }
            let byteCount = groupLength - 1
            // The bits below the last decoded byte came from the last character and must be zero.
            let unusedBits = 24 - 8 * byteCount
            guard groupLength == 4 || group & (1 << unusedBits - 1) == 0 else { return nil }
            for byte in 0..<byteCount {
                output.append(UInt8(truncatingIfNeeded: group >> (16 - 8 * byte)))
            }
            index += groupLength
        }
        return output
    }

    private static func append(_ group: UInt32, characters: Int, to output: inout [UInt8]) {
        for position in 0..<characters {
            output.append(alphabet[Int(group >> (18 - 6 * position) & 0x3F)])
        }
    }
}
