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
        do throws(SystemCallError) {
            return try TCPSocket.connect(host: endpoint.host, port: endpoint.port, timeout: timeout, wakeFD: wakeFD)
        } catch {
            throw PushRelayError(
                .systemCall, "cannot connect to the push relay at \(endpoint): \(describeErrno(error.errno))")
        }
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
