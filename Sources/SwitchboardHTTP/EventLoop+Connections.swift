import CLinux
import Foundation
import Glibc
import Synchronization
import SwitchboardPOSIX

/// Sweeping deadlines, draining, closing connections and epoll registration: the loop's
/// bookkeeping of its connections, on its own thread.
extension EventLoop {
    // MARK: Timers and shutdown

    /// One sweep a second over every connection: header, body, idle and write-stall deadlines.
    func sweep(now: UInt64) {
        for connection in Array(connections.values) {
            if connection.pendingOutput > 0, now - connection.lastWriteProgress > server.writeTimeout {
                closeConnection(connection)
                continue
            }
            if connection.phase == .takenOver, let takeover = connection.takeover {
                takeover.handler.connectionTick(monotonicNanoseconds: now)
                continue
            }
            if connection.phase == .lingering {
                if now >= connection.lingerDeadline { closeConnection(connection) }
                continue
            }
            if connection.pendingOutput > 0 { continue }
            if connection.headerDeadline != 0, now >= connection.headerDeadline {
                let timeout = server.errorResponse(
                    status: 408, code: "REQUEST_TIMEOUT", message: "request head not received in time")
                connection.queue(ResponseEncoder.fixed(timeout, bytes: timeout.bodyBytes, for: nil, keepAlive: false))
                connection.phase = .closingAfterFlush
                flush(connection)
                if connections[connection.fd] === connection { closeConnection(connection) }
            } else if connection.bodyDeadline != 0, now >= connection.bodyDeadline, connection.phase == .reading {
                closeConnection(connection)
            } else if connection.idleDeadline != 0, now >= connection.idleDeadline, connection.phase == .reading {
                closeConnection(connection)
            }
        }
    }

    func beginDrain() {
        draining = true
        acceptBackoff.cancel()
        if listenFD >= 0 {
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, listenFD, nil)
            close(listenFD)
            listenFD = -1
        }
        for connection in Array(connections.values) {
            switch connection.phase {
            case .reading:
                // Idle or half-received requests: nothing is lost by closing them.
                closeConnection(connection)
            case .streaming:
                // Streams never end by themselves; end them so the producer returns.
                connection.task?.cancel()
                connection.stream?.close()
            case .takenOver:
                connection.takeover?.handler.connectionShutdownRequested()
            case .handling, .closingAfterFlush, .lingering:
                break
            }
        }
    }

    func closeConnection(_ connection: Connection) {
        guard connections[connection.fd] === connection else { return }
        connections[connection.fd] = nil
        server.releaseBody(connection.reservedBodyBytes)
        connection.reservedBodyBytes = 0
        server.releasePeer(connection.peerHost)
        connection.task?.cancel()
        connection.stream?.close()
        // The channel first: nothing may reach the descriptor once it can be reused.
        let takeover = connection.takeover
        connection.takeover = nil
        takeover?.channel.close()
        close(connection.fd)
        server.releaseConnection()
        takeover?.handler.connectionClosed()
    }

    // MARK: epoll registration

    func register(_ fd: Int32, events: UInt32) throws(SystemCallError) {
        var event = epoll_event()
        switchboard_epoll_set(&event, events, UInt64(UInt32(bitPattern: fd)))
        try systemCall("epoll_ctl") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
    }

    func setInterest(_ connection: Connection, _ events: UInt32) {
        var event = epoll_event()
        switchboard_epoll_set(&event, events, UInt64(UInt32(bitPattern: connection.fd)))
        if epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, &event) == 0 {
            connection.interest = events
        } else {
            let code = errno
            closeConnection(connection)
            server.report(HTTPTransportProblem(operation: .watch, cause: .error(code), pause: nil))
        }
    }
}
