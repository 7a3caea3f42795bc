import Foundation

/// `application/x-www-form-urlencoded` bodies, as Xiaomi's and OPPO's push APIs take them: the
/// fields in the order given, each name and value percent-encoded but for the unreserved
/// characters (RFC 3986), so `+`, `&`, `=` and non-ASCII text arrive intact.
public enum FormEncoding {
    public static func body(_ fields: [(String, String)]) -> [UInt8] {
        Array(fields.map { "\(encoded($0.0))=\(encoded($0.1))" }.joined(separator: "&").utf8)
    }

    public static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// The fields of a body (the last value of a repeated name wins), `+` read as a space.
    public static func fields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            fields[decoded(parts[0])] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return fields
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
