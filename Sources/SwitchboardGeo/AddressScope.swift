/// Which addresses can name a client on the public internet, so that only those are looked up.
///
/// ```swift
/// AddressScope.isPublic("81.2.69.160")  // true
/// AddressScope.isPublic("10.0.0.1")     // false
/// ```
public enum AddressScope {
    /// Whether `address` (an IPv4 or IPv6 literal; an IPv4-mapped IPv6 address counts as its
    /// IPv4 address) is a public unicast address.
    ///
    /// False for text that is not an address literal, and for IPv4 in 0.0.0.0/8 (unspecified),
    /// 127/8 (loopback), 10/8, 172.16/12, 192.168/16 (private), 100.64/10 (CGNAT),
    /// 169.254/16 (link-local), 192.0.0/24 (protocol assignments), 192.0.2/24, 198.51.100/24,
    /// 203.0.113/24 (documentation), 198.18/15 (benchmarking), 224/4 (multicast) and 240/4
    /// (reserved, with 255.255.255.255). An IPv6 address is public only inside global unicast
    /// 2000::/3, which leaves out ::, ::1, fe80::/10, fc00::/7, ff00::/8, IPv4-compatible and
    /// NAT64 forms and unassigned space, and outside 2001:db8::/32 and 3fff::/20
    /// (documentation) and 2001:2::/48 (benchmarking).
    public static func isPublic(_ address: String) -> Bool {
        IPAddress(address)?.isPublic ?? false
    }
}

extension IPAddress {
    /// Whether this is a public unicast address, as ``AddressScope/isPublic(_:)`` describes.
    var isPublic: Bool {
        switch self {
        case .v4(let value):
            return !Self.nonPublicIPv4.contains { value.isIn(network: $0.network, prefixLength: $0.prefixLength) }
        case .v6(let high, _):
            guard high.isIn(network: 0x2000 << 48, prefixLength: 3) else { return false }
            return !Self.nonPublicIPv6.contains { high.isIn(network: $0.network, prefixLength: $0.prefixLength) }
        }
    }

    private static let nonPublicIPv4: [(network: UInt32, prefixLength: Int)] = [
        (ipv4(0, 0, 0, 0), 8),  // "this network", with the unspecified address
        (ipv4(10, 0, 0, 0), 8),  // private
        (ipv4(100, 64, 0, 0), 10),  // carrier-grade NAT
        (ipv4(127, 0, 0, 0), 8),  // loopback
        (ipv4(169, 254, 0, 0), 16),  // link-local
        (ipv4(172, 16, 0, 0), 12),  // private
        (ipv4(192, 0, 0, 0), 24),  // IETF protocol assignments
        (ipv4(192, 0, 2, 0), 24),  // documentation (TEST-NET-1)
        (ipv4(192, 168, 0, 0), 16),  // private
        (ipv4(198, 18, 0, 0), 15),  // benchmarking
        (ipv4(198, 51, 100, 0), 24),  // documentation (TEST-NET-2)
        (ipv4(203, 0, 113, 0), 24),  // documentation (TEST-NET-3)
        (ipv4(224, 0, 0, 0), 4),  // multicast
        (ipv4(240, 0, 0, 0), 4),  // reserved, with the limited broadcast address
    ]

    /// Ranges inside 2000::/3 that are not public, as prefixes of the first 64 bits.
    private static let nonPublicIPv6: [(network: UInt64, prefixLength: Int)] = [
        (0x2001_0db8 << 32, 32),  // documentation
        (0x3fff << 48, 20),  // documentation (RFC 9637)
        (0x2001_0002 << 32, 48),  // benchmarking
    ]

    private static func ipv4(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
        a << 24 | b << 16 | c << 8 | d
    }
}

extension FixedWidthInteger where Self: UnsignedInteger {
    /// Whether the first `prefixLength` bits of `self` and `network` agree.
    fileprivate func isIn(network: Self, prefixLength: Int) -> Bool {
        prefixLength == 0 || (self ^ network) >> (Self.bitWidth - prefixLength) == 0
    }
}
