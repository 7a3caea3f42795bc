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

/// Writes one JSON object into a string, a field at a time, in the order the fields are given
/// (a writer that must match `JSONEncoder`'s `.sortedKeys` gives them sorted): the one shape of
/// the hand-written encoders on the hot paths (events, calls).
///
/// ```swift
/// JSONObjectWriter.write(into: &text) { object in
///     object.string("callId", event.callId)
///     object.number("id", event.id)
/// }
/// ```
public struct JSONObjectWriter {
    private var text: String
    private var empty = true

    private init(_ text: String) { self.text = text }

    /// Appends `{…}` to `text`, with the fields `body` writes.
    public static func write(into text: inout String, _ body: (inout JSONObjectWriter) -> Void) {
        var writer = JSONObjectWriter(text)
        text = ""
        writer.text += "{"
        body(&writer)
        writer.text += "}"
        text = writer.text
    }

    /// `"key":` after a comma when a field came before.
    private mutating func key(_ key: String) {
        text += empty ? "\"" : ",\""
        empty = false
        text += key
        text += "\":"
    }

    /// A string field; `null` for nil.
    public mutating func string(_ key: String, _ value: String?) {
        self.key(key)
        JSONText.appendString(value, to: &text)
    }

    /// An integer field.
    public mutating func number(_ key: String, _ value: Int64) {
        self.key(key)
        text += String(value)
    }

    /// An object field written by `body`.
    public mutating func object(_ key: String, _ body: (inout JSONObjectWriter) -> Void) {
        self.key(key)
        JSONObjectWriter.write(into: &text, body)
    }

    /// An array field of objects, each written by `body`.
    public mutating func objects<Element>(
        _ key: String, _ elements: some Sequence<Element>, _ body: (inout JSONObjectWriter, Element) -> Void
    ) {
        self.key(key)
        text += "["
        var first = true
        for element in elements {
            if !first { text += "," }
            first = false
            JSONObjectWriter.write(into: &text) { body(&$0, element) }
        }
        text += "]"
    }
}
