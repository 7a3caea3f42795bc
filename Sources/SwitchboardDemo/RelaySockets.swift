import Foundation
import Glibc
import Synchronization
import SwitchboardAPNsEmulator
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardPOSIX

// MARK: Sockets and threads

/// Client sockets for the source (the relay listens and accepts with `TCPSocket`).
enum RelaySocket {
    /// A non-blocking, close-on-exec TCP connection to `endpoint` with `TCP_NODELAY`, made
    /// within `timeout` seconds; gives up early when `wakeFD` becomes readable.
    static func connect(to endpoint: IPv4Endpoint, timeout: Double, wakeFD: Int32) throws(PushRelayError) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: endpoint.port).bigEndian
        guard inet_pton(AF_INET, endpoint.host, &address.sin_addr) == 1 else {
            throw PushRelayError(.systemCall, "'\(endpoint.host)' is not an IPv4 address")
        }
        let fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PushRelayError(.systemCall, "socket: \(describeErrno(errno))") }
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
                let ready = poll(&fds, 2, Int32((left * 1000).rounded(.up)))
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
            throw PushRelayError(
                .systemCall, "cannot connect to the push relay at \(endpoint): \(describeErrno(failure))")
        }
        TCPSocket.setNoDelay(fd)
        return fd
    }

    /// Writes all of `bytes`; `false` when the connection fails or `wakeFD` becomes readable.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8], wakeFD: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                offset += written
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EINTR else { return false }
            var fds = [
                pollfd(fd: fd, events: Int16(POLLOUT), revents: 0),
                pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&fds, 2, -1) < 0, errno != EINTR { return false }
            if fds[1].revents != 0 { return false }
        }
        return true
    }
}

/// A pipe whose read end wakes a `poll`: non-blocking, close-on-exec.
final class WakePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32
    private let closed = Atomic(false)

    init() throws(PushRelayError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PushRelayError(.systemCall, "pipe: \(describeErrno(errno))") }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = ends[0]
        writeFD = ends[1]
    }

    /// Makes the read end readable (a full pipe is readable already).
    func ring() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Empties the pipe, so the next `poll` waits for the next ring.
    func drain() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(readFD, &scratch, scratch.count) > 0 {}
    }

    /// Closes both ends; later calls do nothing. The owner makes sure nobody rings after.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(readFD)
        Glibc.close(writeFD)
    }
}

extension JoinableThread {
    /// Starts `body` on a thread named `name`; a failure to start is a ``PushRelayError``.
    static func relay(name: String, _ body: @escaping @Sendable () -> Void) throws(PushRelayError) -> JoinableThread {
        do {
            return try JoinableThread(name: name, body)
        } catch {
            throw PushRelayError(.systemCall, error.description)
        }
    }
}
