/// Minimal JSON string escaping for hand-built bodies.
public enum JSONText {
    /// Escapes a string for use inside JSON double quotes. Text with nothing to escape (ids,
    /// routes, most messages) is returned as it is, after one pass over its bytes.
    public static func escape(_ text: String) -> String {
        var text = text
        let plain = text.withUTF8 { bytes in !bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C } }
        if plain { return text }
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count + 16)
        let hex = Array("0123456789abcdef".utf8)
        for byte in text.utf8 {
            switch byte {
            case 0x22: result += [0x5C, 0x22]  // \"
            case 0x5C: result += [0x5C, 0x5C]  // \\
            case 0x0A: result += [0x5C, UInt8(ascii: "n")]
            case 0x0D: result += [0x5C, UInt8(ascii: "r")]
            case 0x09: result += [0x5C, UInt8(ascii: "t")]
            case 0x08: result += [0x5C, UInt8(ascii: "b")]  // as JSONEncoder writes them
            case 0x0C: result += [0x5C, UInt8(ascii: "f")]
            case ..<0x20:
                result += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default:
                // Bytes of multi-byte characters (all >= 0x80) go through unchanged.
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Appends `value` as a JSON string (quoted and escaped), or `null` for `nil`: the one
    /// piece every hand-written encoder here (events, calls) repeats for each field.
    public static func appendString(_ value: String?, to text: inout String) {
        guard let value else {
            text += "null"
            return
        }
        text += "\""
        text += escape(value)
        text += "\""
    }
}
