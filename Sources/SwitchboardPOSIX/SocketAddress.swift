import Glibc

/// A numeric host and a port: a bound, listening or peer address.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    /// The numeric host.
    public var host: String
    /// The port.
    public var port: Int

    /// Creates an address from a numeric host and a port.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The address in `storage` (IPv4 or IPv6); `nil` for any other family.
    public init?(_ storage: sockaddr_storage) {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let port: UInt16
        switch Int32(storage.ss_family) {
        case AF_INET:
            port = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var raw = address.pointee.sin_addr
                    inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
                    return address.pointee.sin_port
                }
            }
        case AF_INET6:
            port = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var raw = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
                    return address.pointee.sin6_port
                }
            }
        default:
            return nil
        }
        self.init(
            host: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            port: Int(UInt16(bigEndian: port)))
    }

    /// `host:port`, with brackets around an IPv6 host.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `host:port` or `[v6]:port`; `nil` when malformed.
    public static func parse(_ text: String) -> SocketAddress? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { return nil }
        return SocketAddress(host: String(host), port: port)
    }

    /// `description` of the address in `storage`, or `unknown` for a family other than IPv4/IPv6.
    public static func describe(_ storage: sockaddr_storage) -> String {
        SocketAddress(storage)?.description ?? "unknown"
    }
}
