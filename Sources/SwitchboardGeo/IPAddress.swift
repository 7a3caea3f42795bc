#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address parsed from its text form, with an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`) taken as the IPv4 address it carries.
enum IPAddress: Equatable {
    /// An IPv4 address in host byte order.
    case v4(UInt32)
    /// An IPv6 address as its first and last 64 bits, in host byte order.
    case v6(high: UInt64, low: UInt64)

    /// Parses an IPv4 literal in dotted-quad form (exactly four decimal parts) or an IPv6
    /// literal (RFC 4291 text, no zone index, no brackets, no port); nil for anything else.
    init?(_ text: String) {
        // A C string ends at the first NUL: "81.2.69.160\0junk" would otherwise parse.
        guard !text.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if high == 0, low >> 32 == 0xffff {
            self = .v4(UInt32(truncatingIfNeeded: low))
        } else {
            self = .v6(high: high, low: low)
        }
    }

    /// The address in the text form libmaxminddb is given: dotted quad for IPv4 (so that a
    /// mapped address is looked up in the database's IPv4 tree), and `original` for IPv6.
    func lookupText(original: String) -> String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
        case .v6:
            return original
        }
    }
}
