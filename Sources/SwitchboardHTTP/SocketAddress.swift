import CLinux
import Glibc
import SwitchboardPOSIX

/// A bound or peer address.
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

    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var raw = address.pointee.sin_addr
                    inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
                    return SocketAddress(host: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port: Int(UInt16(bigEndian: address.pointee.sin_port))).description
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var raw = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
                    return SocketAddress(host: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port: Int(UInt16(bigEndian: address.pointee.sin6_port))).description
                }
            }
        default:
            return "unknown"
        }
    }
}

/// Opens non-blocking `SO_REUSEPORT` listening sockets.
enum Listener {
    /// Binds without `SO_REUSEPORT` to learn the port and to fail with `EADDRINUSE` when any
    /// other socket holds it: with `SO_REUSEPORT` alone, a second server run by the same user
    /// would bind the same port and silently take half of the connections.
    static func reservePort(host: String, port: Int) throws -> Int {
        let (fd, address) = try open(host: host, port: port, backlog: nil)
        close(fd)
        return address.port
    }

    static func open(host: String, port: Int, backlog: Int32?) throws -> (fd: Int32, address: SocketAddress) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let info = results else {
            throw SystemCallError(call: "getaddrinfo(\(host))", errno: status == EAI_SYSTEM ? errno : EINVAL)
        }
        defer { freeaddrinfo(results) }
        let fd = try systemCall("socket") {
            socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var on: Int32 = 1
            try systemCall("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) }
            if let backlog {
                try systemCall("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size)) }
                try systemCall("bind(\(host):\(port))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
                try systemCall("listen") { listen(fd, backlog) }
            } else {
                try systemCall("bind(\(host):\(port))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            try systemCall("getsockname") {
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
            }
            guard let address = SocketAddress.parse(describe(storage)) else {
                throw SystemCallError(call: "getsockname", errno: EINVAL)
            }
            return (fd, address)
        } catch {
            close(fd)
            throw error
        }
    }

    private static func describe(_ storage: sockaddr_storage) -> String { SocketAddress.describe(storage) }
}
