import CLinux
import Foundation
import Glibc
import Synchronization
import SwitchboardPOSIX

/// Writing: delivering handlers' answers, flushing queued output, handing a connection over
/// and lingering after the last bytes; on the loop's own thread.
extension EventLoop {
    // MARK: Writing

    func deliver(_ item: Outbound) {
        guard let connection = connections[item.fd], connection.id == item.connectionID else {
            // The connection closed (or its descriptor was reused) before the reply was ready.
            item.connectionWentAway()
            return
        }
        connection.queue(item.bytes)
        switch item.then {
        case .continueStream:
            break
        case .takeOver(let handler, let channel):
            takeOver(connection, handler: handler, channel: channel)
            guard connections[connection.fd] === connection else { return }
        case .drainTakeover(let channel):
            guard connection.takeover?.channel === channel else { return }
            let (bytes, close) = channel.take()
            connection.queue(bytes)
            if close, connection.phase == .takenOver { connection.phase = .closingAfterFlush }
        case .startStream(let channel):
            connection.phase = .streaming
            connection.stream = channel
            if draining { connection.task?.cancel() }
        case .keepAlive:
            connection.phase = draining ? .closingAfterFlush : .reading
            connection.task = nil
            connection.stream = nil
        case .close:
            connection.phase = .closingAfterFlush
            connection.task = nil
            connection.stream = nil
        case .abort:
            closeConnection(connection)
            return
        }
        flush(connection)
        guard connections[connection.fd] === connection else { return }
        if connection.phase == .reading { processInput(connection) }
    }

    /// Hands the connection to `handler` (its `101` head is queued): deadlines off, the bytes
    /// the client sent behind its request handed on, reading on again.
    func takeOver(_ connection: Connection, handler: any HTTPConnectionHandler, channel: TakeoverChannel) {
        connection.phase = .takenOver
        connection.task = nil
        connection.takeover = (handler, channel)
        connection.headerDeadline = 0
        connection.bodyDeadline = 0
        connection.idleDeadline = 0
        handler.connectionStarted(HTTPTakenConnection(channel: channel, remoteAddress: connection.remoteAddress))
        guard connections[connection.fd] === connection else { return }
        let early = connection.parser.takeBufferedBytes()
        if !early.isEmpty {
            early.withUnsafeBytes { handler.connectionReceived($0) }
            guard connections[connection.fd] === connection else { return }
        }
        if connection.interest & switchboard_epollin() == 0 {
            setInterest(connection, connection.interest | switchboard_epollin())
            guard connections[connection.fd] === connection else { return }
        }
        if draining { handler.connectionShutdownRequested() }
    }

    /// Writes queued output until the socket would block; closes on error or when asked to.
    func flush(_ connection: Connection) {
        while connection.outputOffset < connection.output.count {
            let written = connection.output.withUnsafeBytes { buffer in
                send(
                    connection.fd, buffer.baseAddress! + connection.outputOffset,
                    buffer.count - connection.outputOffset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                connection.outputOffset += written
                connection.lastWriteProgress = monotonicNanoseconds()
            } else if written < 0 && errno == EINTR {
                continue
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                connection.takeover?.channel.reportBacklog(connection.pendingOutput)
                if connection.interest & switchboard_epollout() == 0 {
                    setInterest(connection, connection.interest | switchboard_epollout())
                }
                return
            } else {
                closeConnection(connection)
                return
            }
        }
        connection.output = []
        connection.outputOffset = 0
        if connection.interest & switchboard_epollout() != 0 {
            setInterest(connection, connection.interest & ~switchboard_epollout())
        }
        connection.stream?.drained()
        if let takeover = connection.takeover {
            takeover.channel.reportBacklog(0)
            if connection.phase == .closingAfterFlush {
                startLingering(connection)
                return
            }
            if connection.phase == .takenOver, connection.interest & switchboard_epollin() == 0 {
                setInterest(connection, connection.interest | switchboard_epollin())
            }
            return
        }
        if connection.phase == .closingAfterFlush {
            // A body still arriving would make closing reset the connection under the answer.
            if connection.lingerAfterFlush { startLingering(connection) } else { closeConnection(connection) }
        }
    }

    /// After a taken-over connection's last bytes: no more sending, and whatever still arrives
    /// is dropped for up to two seconds, until the peer closes too.
    func startLingering(_ connection: Connection) {
        connection.phase = .lingering
        connection.lingerDeadline = monotonicNanoseconds() + 2_000_000_000
        shutdown(connection.fd, Int32(SHUT_WR))
        if connection.interest & switchboard_epollin() == 0 {
            setInterest(connection, connection.interest | switchboard_epollin())
        }
    }
}
