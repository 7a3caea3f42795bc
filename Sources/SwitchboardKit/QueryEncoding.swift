/// The one place query values are encoded (SPEC §4 rule 8): RFC 3986 unreserved characters
/// stay, everything else is percent-encoded from its UTF-8 bytes — including `+`, which many
/// servers read as a space, so a phone number `+4915…` arrives as `%2B4915…`.
public enum QueryEncoding {
    /// `name=value&…` with both sides encoded, in the given order.
    public static func query(_ items: [(String, String)]) -> String {
        items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// One encoded component.
    public static func encode(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E:  // A-Z a-z 0-9 - . _ ~
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hex[Int(byte >> 4)])
                result.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return result
    }
}
