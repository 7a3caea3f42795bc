import Glibc
import SwitchboardHTTP
import SwitchboardPOSIX

/// The address a request came from, as throttles count it: the peer's host (no port), or, when
/// the peer is a proxy this server trusts (`trustedProxies`), the nearest address in
/// `X-Forwarded-For` that is not one of them. A client cannot choose its address by sending
/// the header itself: only trusted hops are skipped, from the right.
enum ClientAddress {
    /// The address as the throttles count it (``counted(_:)``).
    static func of(_ request: HTTPRequest, trusting proxies: Set<String>) -> String {
        counted(address(of: request, trusting: proxies))
    }

    /// The client's own address, canonical: the peer's, or behind trusted proxies the nearest
    /// untrusted hop of `X-Forwarded-For`.
    static func address(of request: HTTPRequest, trusting proxies: Set<String>) -> String {
        let trusted = Set(proxies.map(canonical))
        let peer = canonical(host(of: request.remoteAddress))
        guard trusted.contains(peer) else { return peer }
        let hops = request.headers.values("X-Forwarded-For")
            .flatMap { $0.split(separator: ",") }
            .map { canonical($0.trimmingCharacters(in: .whitespaces)) }
            .filter { !$0.isEmpty }
        return hops.reversed().first { !trusted.contains($0) } ?? peer
    }

    /// One spelling per address: an IPv4-mapped IPv6 address as its IPv4 address, IPv6 as
    /// `inet_ntop` writes it; anything else as given.
    static func canonical(_ text: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return text }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return text }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return text }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What a throttle counts: an IPv4 address itself, an IPv6 address by its /64 (one
    /// subscriber's network: its hosts are the subscriber's to rotate through).
    static func counted(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
    }

    /// `host` of `host:port` or `[v6]:port`; the text itself otherwise (`in-process`).
    static func host(of address: String) -> String {
        SocketAddress.parse(address)?.host ?? address
    }
}
