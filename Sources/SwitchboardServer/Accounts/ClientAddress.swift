import SwitchboardHTTP
import SwitchboardPOSIX

/// The address a request came from, as throttles count it: the peer's host (no port), or, when
/// the peer is a proxy this server trusts (`trustedProxies`), the nearest address in
/// `X-Forwarded-For` that is not one of them. A client cannot choose its address by sending
/// the header itself: only trusted hops are skipped, from the right.
enum ClientAddress {
    static func of(_ request: HTTPRequest, trusting proxies: Set<String>) -> String {
        let peer = host(of: request.remoteAddress)
        guard proxies.contains(peer) else { return peer }
        let hops = request.headers.values("X-Forwarded-For")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        return hops.reversed().first { !proxies.contains($0) } ?? peer
    }

    /// `host` of `host:port` or `[v6]:port`; the text itself otherwise (`in-process`).
    static func host(of address: String) -> String {
        SocketAddress.parse(address)?.host ?? address
    }
}
