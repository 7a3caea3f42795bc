/// The configuration file's grammar: one JSON object (RFC 8259, strictly: no trailing commas,
/// no comments, no duplicate keys) whose values are strings and numbers. Each entry keeps the
/// line and column where its value starts, so a wrong value can be pointed at.
struct ConfigurationFile: Equatable {
    /// A value as the file spells it; which kinds a setting takes is the setting's business.
    enum Value: Equatable {
        case string(String)
        case integer(Int)
        /// A number with a fraction or an exponent, or an integer too large for `Int`: its text.
        case otherNumber(String)
        case boolean(Bool)
        case null
        case object
        case array

        /// How a message names this kind of value.
        var kindName: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .otherNumber: "a non-integer number"
            case .boolean: "a boolean"
            case .null: "null"
            case .object: "an object"
            case .array: "an array"
            }
        }
    }

    struct Entry: Equatable {
        let key: String
        let value: Value
        /// 1-based line and column (in Unicode scalars) where the value starts.
        let line: Int
        let column: Int
    }

    /// A syntax error, with the 1-based line and column where it was found.
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        let line: Int
        let column: Int
        let problem: String
        var description: String { "line \(line), column \(column): \(problem)" }
    }

    /// The entries in the order they appear.
    let entries: [Entry]

    init(parsing bytes: [UInt8]) throws(SyntaxError) {
        var reader = Reader(bytes: bytes)
        entries = try reader.parseDocument()
    }
}

/// A one-pass reader over the file's bytes that keeps track of the line and column.
private struct Reader {
    let bytes: [UInt8]
    var index = 0
    var line = 1
    var column = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
        // A UTF-8 byte order mark is tolerated (editors on some systems write one).
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func advance() {
        guard let byte = current else { return }
        index += 1
        if byte == 0x0A {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {  // continuation bytes belong to the scalar already counted
            column += 1
        }
    }

    func error(_ problem: String) -> ConfigurationFile.SyntaxError {
        ConfigurationFile.SyntaxError(line: line, column: column, problem: problem)
    }

    /// What the next byte is, for messages.
    var found: String {
        guard let byte = current else { return "the end of the file" }
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return String(format: "byte 0x%02X", byte)
    }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { advance() }
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(ConfigurationFile.SyntaxError) {
        guard current == byte else { throw error("expected \(what), found \(found)") }
        advance()
    }

    mutating func parseDocument() throws(ConfigurationFile.SyntaxError) -> [ConfigurationFile.Entry] {
        skipWhitespace()
        guard current == UInt8(ascii: "{") else {
            throw error("the file must be one JSON object ({\"key\": value, …}), found \(found)")
        }
        advance()
        var entries: [ConfigurationFile.Entry] = []
        var seen: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            advance()
        } else {
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else {
                    let trailing = entries.isEmpty ? "" : " (a comma after the last entry is not allowed)"
                    throw error("expected a key in double quotes, found \(found)\(trailing)")
                }
                let keyLine = line, keyColumn = column
                let key = try parseString()
                guard seen.insert(key).inserted else {
                    throw ConfigurationFile.SyntaxError(
                        line: keyLine, column: keyColumn, problem: "duplicate key '\(key)'")
                }
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':' after the key '\(key)'")
                skipWhitespace()
                let valueLine = line, valueColumn = column
                let value = try parseValue()
                entries.append(.init(key: key, value: value, line: valueLine, column: valueColumn))
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    advance()
                    continue
                }
                guard current == UInt8(ascii: "}") else {
                    throw error("expected ',' or '}' after a value, found \(found)")
                }
                advance()
                break
            }
        }
        skipWhitespace()
        guard current == nil else { throw error("expected the end of the file after the object, found \(found)") }
        return entries
    }

    mutating func parseValue() throws(ConfigurationFile.SyntaxError) -> ConfigurationFile.Value {
        guard let byte = current else {
            throw error("expected a value (a string in double quotes or a number), found \(found)")
        }
        switch byte {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"):
            try parseWord("true")
            return .boolean(true)
        case UInt8(ascii: "f"):
            try parseWord("false")
            return .boolean(false)
        case UInt8(ascii: "n"):
            try parseWord("null")
            return .null
        case UInt8(ascii: "{"):
            try skipNested(open: UInt8(ascii: "{"), close: UInt8(ascii: "}"))
            return .object
        case UInt8(ascii: "["):
            try skipNested(open: UInt8(ascii: "["), close: UInt8(ascii: "]"))
            return .array
        default:
            throw error("expected a value (a string in double quotes or a number), found \(found)")
        }
    }

    mutating func parseWord(_ word: String) throws(ConfigurationFile.SyntaxError) {
        for byte in word.utf8 {
            guard current == byte else {
                throw error("expected a value (a string in double quotes or a number), found \(found)")
            }
            advance()
        }
    }

    /// Steps over a nested object or array (its contents are not settings; only its end matters).
    mutating func skipNested(open: UInt8, close: UInt8) throws(ConfigurationFile.SyntaxError) {
        var depth = 0
        repeat {
            guard let byte = current else {
                throw error("unterminated \(open == UInt8(ascii: "{") ? "object" : "array")")
            }
            if byte == UInt8(ascii: "\"") {
                _ = try parseString()
                continue
            }
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") { depth += 1 }
            if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { depth -= 1 }
            advance()
        } while depth > 0
    }

    mutating func parseNumber() throws(ConfigurationFile.SyntaxError) -> ConfigurationFile.Value {
        let start = index
        var integral = true
        if current == UInt8(ascii: "-") { advance() }
        guard let first = current, first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") else {
            throw error("expected a digit, found \(found)")
        }
        advance()
        if first == UInt8(ascii: "0"), let next = current, next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9") {
            throw error("a number must not start with 0")
        }
        skipDigits()
        if current == UInt8(ascii: ".") {
            integral = false
            advance()
            guard isDigit(current) else { throw error("expected a digit after '.', found \(found)") }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            advance()
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { advance() }
            guard isDigit(current) else { throw error("expected a digit in the exponent, found \(found)") }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let value = Int(text) { return .integer(value) }
        return .otherNumber(text)
    }

    func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ?? false }

    mutating func skipDigits() { while isDigit(current) { advance() } }

    mutating func parseString() throws(ConfigurationFile.SyntaxError) -> String {
        advance()  // the opening quote
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []  // unescaped bytes, decoded together
        func flush() throws(ConfigurationFile.SyntaxError) {
            guard !run.isEmpty else { return }
            guard let text = String(validating: run, as: UTF8.self) else {
                throw error("the string is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
            run.removeAll(keepingCapacity: true)
        }
        while true {
            guard let byte = current else { throw error("unterminated string (a closing '\"' is missing)") }
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                advance()
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush()
                advance()
                scalars.append(try parseEscape())
            case 0x00..<0x20:
                throw error("a control character must be escaped inside a string (a line break is \\n)")
            default:
                run.append(byte)
                advance()
            }
        }
    }

    mutating func parseEscape() throws(ConfigurationFile.SyntaxError) -> Unicode.Scalar {
        guard let byte = current else { throw error("unterminated string") }
        advance()
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try parseHex4()
            if (0xD800...0xDBFF).contains(high) {
                guard current == UInt8(ascii: "\\") else { throw error("a \\u surrogate must come in a pair") }
                advance()
                guard current == UInt8(ascii: "u") else { throw error("a \\u surrogate must come in a pair") }
                advance()
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("a \\u surrogate must come in a pair") }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(high) else { throw error("a \\u surrogate must come in a pair") }
            return scalar
        default:
            throw error("unknown escape '\\\(Character(Unicode.Scalar(byte)))' in a string")
        }
    }

    mutating func parseHex4() throws(ConfigurationFile.SyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Self.hexValue(byte) else {
                throw error("expected 4 hex digits after \\u")
            }
            value = value * 16 + digit
            advance()
        }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt32? {
        guard byte < 0x80, let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
        return UInt32(digit)
    }
}
