import Glibc

/// The one place TCP sockets are set up, for the HTTP server, the APNs emulator and the
/// weak-network proxy: non-blocking, close-on-exec sockets; `SO_REUSEADDR` listeners
/// (optionally `SO_REUSEPORT`, one per event loop); `TCP_NODELAY` connections.
public enum TCPSocket {
    /// Makes `fd` non-blocking and close-on-exec.
    public static func configure(_ fd: Int32) throws(SystemCallError) {
        let flags = try systemCall("fcntl F_GETFL") { fcntl(fd, F_GETFL) }
        try systemCall("fcntl F_SETFL") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        try systemCall("fcntl F_SETFD") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    /// Turns off Nagle's algorithm on a connected socket; a failure (a socket that is not TCP)
    /// is ignored, since it only costs latency.
    public static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Opens a non-blocking listening socket on `host:port` and returns it with the address
    /// actually bound (the kernel's port when 0 was asked for).
    ///
    /// `host` is a numeric IPv4 or IPv6 address or a name the resolver knows; `localhost` is
    /// always 127.0.0.1, so a test's server and client agree on the family. With
    /// `sharedPort`, the socket sets `SO_REUSEPORT` so several listeners (one per event loop)
    /// share the port; take the port from `reservePort` first. A failed bind is a
    /// `SystemCallError` whose call starts with `bind`.
    public static func listen(
        host: String, port: Int, backlog: Int32 = 511, sharedPort: Bool = false
    )
        throws(SystemCallError) -> (fd: Int32, address: SocketAddress)
    {
        try open(host: host, port: port, listening: (backlog: backlog, sharedPort: sharedPort))
    }

    /// Binds `host:port` without `SO_REUSEPORT`, closes it and returns the port: the port a
    /// group of `sharedPort` listeners then takes. Binding alone fails with `EADDRINUSE` when
    /// any other socket holds the port; with `SO_REUSEPORT` alone, a second server run by the
    /// same user would bind the same port and silently take half of the connections.
    public static func reservePort(host: String, port: Int) throws(SystemCallError) -> Int {
        let (fd, address) = try open(host: host, port: port, listening: nil)
        close(fd)
        return address.port
    }

    private static func open(
        host: String, port: Int, listening: (backlog: Int32, sharedPort: Bool)?
    )
        throws(SystemCallError) -> (fd: Int32, address: SocketAddress)
    {
        let name = host == "localhost" ? "127.0.0.1" : host
        let shown = SocketAddress(host: host, port: port).description
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, String(port), &hints, &results)
        guard status == 0, let info = results else {
            let detail = status == EAI_SYSTEM ? "" : " (\(String(cString: gai_strerror(status))))"
            throw SystemCallError(call: "getaddrinfo \(host)\(detail)", errno: status == EAI_SYSTEM ? errno : EINVAL)
        }
        defer { freeaddrinfo(results) }
        let fd = try systemCall("socket") {
            socket(
                info.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do throws(SystemCallError) {
            var one: Int32 = 1
            try systemCall("setsockopt SO_REUSEADDR") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if listening?.sharedPort == true {
                try systemCall("setsockopt SO_REUSEPORT") {
                    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
                }
            }
            try systemCall("bind \(shown)") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            if let listening {
                try systemCall("listen") { Glibc.listen(fd, listening.backlog) }
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            try systemCall("getsockname") {
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
            }
            guard let address = SocketAddress(storage) else {
                throw SystemCallError(call: "getsockname", errno: EAFNOSUPPORT)
            }
            return (fd, address)
        } catch {
            close(fd)
            throw error
        }
    }

    /// A non-blocking, close-on-exec TCP connection to `host:port` (IPv4) with `TCP_NODELAY`,
    /// made within `timeout` seconds; gives up early (`ECANCELED`) when `wakeFD` becomes
    /// readable (its owner is stopping). The error's `errno` says why it failed (`ETIMEDOUT`
    /// when the time ran out).
    public static func connect(
        host: String, port: Int, timeout: Double, wakeFD: Int32
    ) throws(SystemCallError)
        -> Int32
    {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw SystemCallError(call: "connect \(host):\(port)", errno: EINVAL)
        }
        let fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError(call: "socket", errno: errno) }
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var failure = started == 0 ? 0 : errno
        if failure == EINPROGRESS || failure == EINTR {
            failure = ETIMEDOUT
            let deadline = monotonicSeconds() + timeout
            while true {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                var fds = [
                    pollfd(fd: fd, events: Int16(POLLOUT), revents: 0),
                    pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&fds, 2, Int32(min(left * 1000, 60_000).rounded(.up)))
                if ready < 0, errno == EINTR { continue }
                if fds[1].revents != 0 {
                    failure = ECANCELED
                    break
                }
                if fds[0].revents != 0 {
                    var code: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                    failure = code
                    break
                }
            }
        }
        guard failure == 0 else {
            close(fd)
            throw SystemCallError(call: "connect \(host):\(port)", errno: failure)
        }
        setNoDelay(fd)
        return fd
    }

    /// Accepts one pending connection as a non-blocking, close-on-exec socket with
    /// `TCP_NODELAY`, or returns `nil` when none is pending. A connection aborted before it
    /// was accepted is skipped, and the next one taken.
    public static func accept(_ listener: Int32) throws(SystemCallError) -> Int32? {
        var accepted: Int32?
        while accepted == nil {
            do {
                accepted = try systemCall("accept") { Glibc.accept(listener, nil, nil) }
            } catch  where error.errno == ECONNABORTED {
                continue
            } catch  where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                return nil
            }
        }
        let fd = accepted!
        do throws(SystemCallError) {
            try configure(fd)
        } catch {
            close(fd)
            throw error
        }
        setNoDelay(fd)
        return fd
    }
}
