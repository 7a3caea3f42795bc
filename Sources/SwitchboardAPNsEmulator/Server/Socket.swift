import Glibc
import SwitchboardPOSIX

/// The emulator's system-call failures are the shared `SystemCallError`.
public typealias APNsEmulatorSystemError = SystemCallError

/// Socket set-up for the listener and accepted connections.
enum Socket {
    /// Makes `fd` non-blocking and close-on-exec.
    static func configure(_ fd: Int32) throws(APNsEmulatorSystemError) {
        let flags = try systemCall("fcntl F_GETFL") { fcntl(fd, F_GETFL) }
        try systemCall("fcntl F_SETFL") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        try systemCall("fcntl F_SETFD") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    /// Opens a non-blocking listening TCP socket on `host:port` (an IPv4 or IPv6 literal, or
    /// `localhost`), and returns it with the port actually bound (for port 0).
    static func listen(host: String, port: Int, backlog: Int32 = 511) throws(APNsEmulatorSystemError) -> (fd: Int32, port: Int) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
        } else {
            throw APNsEmulatorSystemError(call: "inet_pton \(host) (an IP address or localhost is required)", errno: EINVAL)
        }
        let fd = try systemCall("socket") { socket(family, Int32(SOCK_STREAM.rawValue), 0) }
        do {
            var one: Int32 = 1
            try systemCall("setsockopt SO_REUSEADDR") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            try configure(fd)
            if family == AF_INET {
                try systemCall("bind \(host):\(port)") {
                    withUnsafePointer(to: &v4) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
            } else {
                try systemCall("bind [\(host)]:\(port)") {
                    withUnsafePointer(to: &v6) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                        }
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

    /// Accepts one pending connection as a non-blocking socket with `TCP_NODELAY`, or returns
    /// `nil` when none is pending.
    static func accept(_ listener: Int32) throws(APNsEmulatorSystemError) -> Int32? {
        let fd: Int32
        do {
            fd = try systemCall("accept") { Glibc.accept(listener, nil, nil) }
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK || error.errno == ECONNABORTED {
            return nil
        }
        do {
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

/// What a transport read or write did.
enum TransportResult {
    case transferred(Int)
    case wouldBlock
    case closed
    case failed(String)
}

/// Moves bytes between a connection and its socket: plain TCP for h2c, or TLS.
protocol ConnectionTransport: AnyObject {
    /// Reads into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult
    /// Writes a prefix of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) -> TransportResult
    /// Whether the transport itself waits for the socket to become writable (a TLS handshake).
    var wantsWritable: Bool { get }
    /// The socket to poll, or `nil` once closed.
    var pollDescriptor: Int32? { get }
    /// Whether input is buffered above the socket (decrypted TLS records), so polling the
    /// socket would not report it.
    var hasBufferedInput: Bool { get }
    /// Ends the sending direction (TLS close_notify, then a TCP FIN) but keeps reading, so
    /// bytes the peer sent meanwhile do not turn the close into a reset that could destroy
    /// the last responses and GOAWAY before the peer reads them.
    func shutdownWrite()
    /// Closes the socket.
    func close()
}

/// Cleartext TCP (h2c with prior knowledge): owns the socket and closes it once.
final class PlainTransport: ConnectionTransport {
    private var fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        do {
            let count = try systemCall("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
            return count == 0 ? .closed : .transferred(count)
        } catch {
            return Self.result(of: error)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransportResult {
        do {
            return .transferred(try systemCall("send") { send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) })
        } catch {
            return Self.result(of: error)
        }
    }

    var wantsWritable: Bool { false }

    var pollDescriptor: Int32? { fd >= 0 ? fd : nil }

    var hasBufferedInput: Bool { false }

    func shutdownWrite() {
        if fd >= 0 { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    static func result(of error: APNsEmulatorSystemError) -> TransportResult {
        switch error.errno {
        case EAGAIN, EWOULDBLOCK: .wouldBlock
        case ECONNRESET, EPIPE: .closed
        default: .failed(error.description)
        }
    }
}
