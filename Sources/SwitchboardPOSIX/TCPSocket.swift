import Glibc

/// TCP socket set-up shared by the APNs emulator and the weak-network proxy: non-blocking,
/// close-on-exec sockets, `SO_REUSEADDR` listeners, `TCP_NODELAY` connections.
public enum TCPSocket {
    /// Makes `fd` non-blocking and close-on-exec.
    public static func configure(_ fd: Int32) throws(SystemCallError) {
        let flags = try systemCall("fcntl F_GETFL") { fcntl(fd, F_GETFL) }
        try systemCall("fcntl F_SETFL") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        try systemCall("fcntl F_SETFD") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    /// Opens a non-blocking listening socket on `host:port` (an IPv4 or IPv6 literal, or
    /// `localhost` for 127.0.0.1) and returns it with the port actually bound (for port 0).
    /// A failed bind is a `SystemCallError` whose call starts with `bind`.
    public static func listen(host: String, port: Int, backlog: Int32 = 511) throws(SystemCallError) -> (fd: Int32, port: Int) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        } else {
            throw SystemCallError(call: "inet_pton \(host) (an IP address or localhost is required)", errno: EINVAL)
        }
        let fd = try systemCall("socket") { socket(family, Int32(SOCK_STREAM.rawValue), 0) }
        do throws(SystemCallError) {
            var one: Int32 = 1
            try systemCall("setsockopt SO_REUSEADDR") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            try configure(fd)
            if family == AF_INET {
                try systemCall("bind \(host):\(port)") {
                    withUnsafePointer(to: &v4) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                    }
                }
            } else {
                try systemCall("bind [\(host)]:\(port)") {
                    withUnsafePointer(to: &v6) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                    }
                }
            }
            try systemCall("listen") { Glibc.listen(fd, backlog) }
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            try systemCall("getsockname") {
                withUnsafeMutablePointer(to: &bound) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
            }
            let boundPort: UInt16 =
                family == AF_INET
                ? withUnsafePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port } }
                : withUnsafePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port } }
            return (fd, Int(UInt16(bigEndian: boundPort)))
        } catch {
            close(fd)
            throw error
        }
    }

    /// Accepts one pending connection as a non-blocking, close-on-exec socket with
    /// `TCP_NODELAY`, or returns `nil` when none is pending. A connection aborted before it
    /// was accepted is skipped, and the next one taken.
    public static func accept(_ listener: Int32) throws(SystemCallError) -> Int32? {
        var accepted: Int32?
        while accepted == nil {
            do {
                accepted = try systemCall("accept") { Glibc.accept(listener, nil, nil) }
            } catch where error.errno == ECONNABORTED {
                continue
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                return nil
            }
        }
        let fd = accepted!
        do throws(SystemCallError) {
            try configure(fd)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        } catch {
            close(fd)
            throw error
        }
    }
}
