import Foundation
import SwitchboardHTTP

extension RequestContext {
    /// Decodes the JSON body; a missing, malformed or mistyped body is a 400 that names the field.
    public func decode<T: Decodable>(_ type: T.Type) throws(APIError) -> T {
        try JSONBody.decode(type, from: request.body)
    }
}

/// JSON in and out of the API, with errors in the spec's envelope.
public enum JSONBody {
    /// The encoder for every response body.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Decodes `bytes`, turning `DecodingError` into a 400 that names the field at fault.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(APIError) -> T {
        guard !bytes.isEmpty else { throw APIError.validation("request body must be a JSON object") }
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch let error as DecodingError {
            let described = describe(error)
            // JSON has no NaN or infinity, so a body that writes them (as some encoders do:
            // `NaN`, `Infinity`, or a number beyond a double's range) is not JSON at all; the
            // 400 still names the field that holds one.
            if described.field == nil, let field = nonFiniteField(in: bytes) {
                throw APIError.validation("'\(field)' must be a finite number", field: field)
            }
            throw described
        } catch {
            throw APIError.validation("request body is not valid JSON")
        }
    }

    /// The first key (of any object in `body`) whose value is a number token that is not
    /// finite: `NaN`, `Infinity`, `-Infinity` or a literal beyond a double's range; with
    /// `integer`, also any number that is not an integer. Among `fields` only, when given.
    ///
    /// One pass over the bytes, with a string made only for a key followed by a bare token:
    /// a hostile body costs time in proportion to its length, a few milliseconds per MiB.
    static func nonFiniteField(in body: [UInt8], among fields: [String]? = nil, integer: Bool = false) -> String? {
        let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, colon: UInt8 = 0x3A
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        func isToken(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2B || byte == 0x2D || byte == 0x2E
        }
        let count = body.count
        var index = 0
        while index < count {
            guard body[index] == quote else {
                index += 1
                continue
            }
            // A string, to its closing quote (escapes skipped); then, if a colon follows, a key.
            let open = index + 1
            var close = open
            while close < count, body[close] != quote { close += body[close] == backslash ? 2 : 1 }
            guard close < count else { return nil }
            index = close + 1
            var value = index
            while value < count, isBlank(body[value]) { value += 1 }
            guard value < count, body[value] == colon else { continue }
            value += 1
            while value < count, isBlank(body[value]) { value += 1 }
            var end = value
            while end < count, isToken(body[end]) { end += 1 }
            guard end > value else { continue }
            let key = String(decoding: body[open..<close], as: UTF8.self)
            guard fields?.contains(key) ?? true else { continue }
            let token = String(decoding: body[value..<end], as: UTF8.self)
            if ["NaN", "-NaN", "Infinity", "-Infinity", "+Infinity"].contains(token) { return key }
            if let number = Double(token), !number.isFinite || (integer && Int(exactly: number) == nil) { return key }
        }
        return nil
    }

    static func describe(_ error: DecodingError) -> APIError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return .validation("field '\(field)' is required", field: field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return .validation("request body must be a JSON object") }
            return .validation("field '\(field)' must be \(describe(type))", field: field)
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            return .validation("field '\(field)' must be \(describe(type)), not null", field: field)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return .validation("request body is not valid JSON") }
            return .validation("field '\(field)' is invalid: \(context.debugDescription)", field: field)
        @unknown default:
            return .validation("request body is not acceptable")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }
}

extension HTTPResponse {
    /// A JSON response from an `Encodable` value.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        do {
            let data = try JSONBody.makeEncoder().encode(value)
            return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(data))
        } catch {
            return APIError.internal.response
        }
    }

    /// A response with no body (204).
    public static let noContent = HTTPResponse(status: 204)
}

/// An optional response field that is always written: `null` when absent, where the
/// synthesized encoder would leave the key out (the document marks such fields required and
/// nullable).
///
/// ```swift
/// struct Outcome: Encodable { @NullWhenAbsent var reason: String? }   // {"reason":null}
/// ```
@propertyWrapper
struct NullWhenAbsent<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
