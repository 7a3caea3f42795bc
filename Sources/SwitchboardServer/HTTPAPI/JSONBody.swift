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
    static func nonFiniteField(in body: [UInt8], among fields: [String]? = nil, integer: Bool = false) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "\"") {
            let afterOpen = rest[rest.index(after: open)...]
            guard let close = afterOpen.firstIndex(of: "\"") else { return nil }
            let key = String(afterOpen[..<close])
            rest = afterOpen[afterOpen.index(after: close)...]
            let colon = rest.drop(while: blank)
            guard colon.first == ":", fields?.contains(key) ?? true else { continue }
            let token = colon.dropFirst().drop(while: blank).prefix { $0.isLetter || $0.isNumber || "+-.".contains($0) }
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
