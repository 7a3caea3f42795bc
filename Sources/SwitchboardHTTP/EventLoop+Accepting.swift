import CLinux
import Foundation
import Glibc
import Synchronization
import SwitchboardPOSIX

// Accepting connections: the descriptor reserve, the connection cap, and the pause after a
// failure that would repeat at once (accept is level-triggered, so a full table stays readable).
extension EventLoop {
    func acceptConnections() {
        // The listening socket may still be in the batch that reported the failure.
        guard !acceptBackoff.isPaused else { return }
        for _ in 0..<128 {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    server.configuration.acceptCall(listenFD, $0, &length)
                }
            }
            if fd < 0 {
                let code = errno
                switch AcceptFailure(errno: code) {
                case .retry: continue
                case .caughtUp:
                    acceptBackoff.recovered()
                    return
                case .connectionFailed:
                    server.report(HTTPTransportProblem(operation: .accept, cause: .error(code), pause: nil))
                    continue
                case .pause:
                    pauseAccepting(HTTPTransportProblem(operation: .accept, cause: .error(code), pause: nil))
                    return
                }
            }
            if fd >= descriptors.limit - descriptors.reserve {
                // Descriptors are allocated lowest first, so this one being among the last few
                // means nearly all are taken. Serving it would leave none for the database,
                // outgoing connections or the Swift runtime (libdispatch traps when it cannot
                // open a file): refuse it and pause as if accept had said EMFILE.
                refuse(fd, message: "out of file descriptors")
                pauseAccepting(
                    HTTPTransportProblem(
                        operation: .accept,
                        cause: .descriptorReserve(limit: descriptors.limit, reserve: descriptors.reserve), pause: nil))
                return
            }
            guard server.admitConnection() else {
                refuse(fd, message: "too many open connections")
                continue
            }
            let peer = SocketAddress(address)
            let peerHost = peer?.host ?? "unknown"
            guard server.admitPeer(peerHost) else {
                server.releaseConnection()
                refuse(fd, message: "too many open connections from this address")
                continue
            }
            // Progress: the next pause, if any, is short again.
            acceptBackoff.recovered()
            TCPSocket.setNoDelay(fd)
            nextConnectionID += 1
            let id = UInt64(index) << 48 | nextConnectionID
            let connection = Connection(
                fd: fd, id: id, remoteAddress: peer?.description ?? "unknown", peerHost: peerHost,
                limits: server.configuration.limits)
            connection.headerDeadline = monotonicNanoseconds() + server.headerTimeout
            connections[fd] = connection
            do {
                try register(fd, events: readInterest)
                connection.interest = readInterest
            } catch {
                // Out of epoll watches or memory: the client is dropped; do not take the next
                // one at once.
                closeConnection(connection)
                let problem = HTTPTransportProblem(operation: .watch, cause: .error(error.errno), pause: nil)
                if problem.isResourceExhaustion {
                    pauseAccepting(problem)
                    return
                }
                server.report(problem)
            }
        }
    }

    /// Answers 503 `SERVER_BUSY` and closes.
    func refuse(_ fd: Int32, message: String) {
        let busy = server.errorResponse(status: 503, code: "SERVER_BUSY", message: message)
        let bytes = ResponseEncoder.fixed(busy, bytes: busy.bodyBytes, for: nil, keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
    }

    /// Stops watching the listening socket until the backoff ends (the run loop's timeout
    /// wakes it then): the connections already open are served meanwhile, and clients that
    /// connect wait in the kernel's backlog.
    /// `problem` is reported with the pause's length.
    func pauseAccepting(_ problem: HTTPTransportProblem) {
        let pause = acceptBackoff.failed(now: monotonicNanoseconds())
        if listenFD >= 0 { _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, listenFD, nil) }
        server.report(
            HTTPTransportProblem(operation: problem.operation, cause: problem.cause, pause: .nanoseconds(Int64(pause))))
    }

    func resumeAccepting() {
        guard listenFD >= 0, !draining else { return }
        do {
            try register(listenFD, events: switchboard_epollin())
        } catch  where error.errno == EEXIST {
            // Still watched: the removal failed, so there is nothing to restore.
        } catch {
            pauseAccepting(HTTPTransportProblem(operation: .watch, cause: .error(error.errno), pause: nil))
        }
    }

    private var readInterest: UInt32 { switchboard_epollin() | switchboard_epollrdhup() }
}
