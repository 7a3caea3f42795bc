import Glibc
import Synchronization
import SwitchboardPOSIX

/// The shared system-call choke point (`SwitchboardPOSIX.systemCall`), its failure as the
/// proxy's `systemCall` error.
@discardableResult
func posixCall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(NetSimError) -> T {
    do throws(SystemCallError) {
        return try systemCall(name, body)
    } catch {
        throw NetSimError(.systemCall, error.description)
    }
}

/// Socket set-up for the proxy: IPv4 TCP only; listening and accepting are `TCPSocket`'s.
enum Socket {
    static let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    /// A non-blocking listening socket bound to `endpoint`, and the port it got.
    static func listen(on endpoint: IPv4Endpoint, backlog: Int32 = 128) throws(NetSimError) -> (fd: Int32, port: Int) {
        do throws(SystemCallError) {
            let (fd, address) = try TCPSocket.listen(host: endpoint.host, port: endpoint.port, backlog: backlog)
            return (fd, address.port)
        } catch  where error.call.hasPrefix("bind") {
            throw NetSimError(.bindFailed, "cannot listen on \(endpoint): \(describeErrno(error.errno))")
        } catch {
            throw NetSimError(.systemCall, error.description)
        }
    }

    /// Accepts one connection as a non-blocking socket; `nil` when none is waiting.
    static func accept(from listener: Int32) throws(NetSimError) -> Int32? {
        do throws(SystemCallError) {
            return try TCPSocket.accept(listener)
        } catch {
            throw NetSimError(.systemCall, error.description)
        }
    }

    /// Connects to `endpoint` without blocking past `timeout` seconds, giving up early when
    /// `wakeFD` becomes readable (the proxy is stopping). Returns a non-blocking socket.
    static func connect(to endpoint: IPv4Endpoint, timeout: Double, wakeFD: Int32) throws(NetSimError) -> Int32 {
        var address = try endpoint.socketAddress(role: "upstream")
        let fd = try posixCall("socket") { socket(AF_INET, streamType | Int32(SOCK_NONBLOCK.rawValue), 0) }
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var failure = started == 0 ? 0 : errno
        if failure == EINPROGRESS || failure == EINTR {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLOUT), revents: 0),
                pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            ]
            let deadline = monotonicSeconds() + timeout
            failure = ETIMEDOUT
            while true {
                let remaining = deadline - monotonicSeconds()
                if remaining <= 0 { break }
                let ready = poll(&fds, 2, Int32(min(remaining * 1000, 60_000).rounded(.up)))
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
        if failure != 0 {
            close(fd)
            throw NetSimError(.systemCall, "cannot connect to upstream \(endpoint): \(describeErrno(failure))")
        }
        setNoDelay(fd)
        return fd
    }

    /// Small writes go out at once: the schedule, not Nagle, decides when bytes leave.
    static func setNoDelay(_ fd: Int32) {
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Closes with `SO_LINGER` 0, so the peer gets an RST instead of a FIN.
    static func abort(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }
}

extension JoinableThread {
    /// Starts `body` on a new thread; a failure to start is a ``NetSimError`` (`systemCall`).
    static func start(_ body: @escaping @Sendable () -> Void) throws(NetSimError) -> JoinableThread {
        do {
            return try JoinableThread(body)
        } catch {
            throw NetSimError(.systemCall, error.description)
        }
    }
}
