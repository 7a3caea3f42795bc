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
        _ = try endpoint.socketAddress(role: "upstream")
        do throws(SystemCallError) {
            return try TCPSocket.connect(host: endpoint.host, port: endpoint.port, timeout: timeout, wakeFD: wakeFD)
        } catch {
            throw NetSimError(.systemCall, "cannot connect to upstream \(endpoint): \(describeErrno(error.errno))")
        }
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
