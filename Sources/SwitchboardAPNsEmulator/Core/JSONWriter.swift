import SwitchboardObservability
/// Writes compact JSON text in the order it is given, so responses have a stable member order
/// and already-validated JSON (a push payload) can be embedded byte for byte.
///
/// ```swift
/// var json = JSONWriter()
/// json.beginObject()
/// json.member("reason", "BadDeviceToken")
/// json.endObject()
/// json.text   // {"reason":"BadDeviceToken"}
/// ```
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the next value or key at the current depth needs a comma before it.
    private var needsComma = false

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"name":`; the value written next completes the member.
    mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes the member `"name":"value"`.
    mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    /// Writes the member `"name":value`.
    mutating func member(_ name: String, _ value: some BinaryInteger) {
        key(name)
        integer(value)
    }

    mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    /// Embeds `json`, which the caller has already checked is one valid JSON value.
    mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = false
    }

    private mutating func appendQuoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: JSONText.escape(value).utf8)
        bytes.append(UInt8(ascii: "\""))
    }

}
