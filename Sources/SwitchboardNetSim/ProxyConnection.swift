import Glibc
import SwitchboardPOSIX

/// One proxied connection, run start to end on its own thread: connects upstream, then moves
/// bytes both ways with `poll`, holding each segment until its schedule releases it.
///
/// Not `Sendable` and never shared: it is created and used only on the connection's thread.
final class ProxyConnection {
    private let core: ProxyCore
    private let client: Int32
    private var upstream: Int32 = -1
    private var schedule: ConnectionSchedule
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(core: ProxyCore, clientFD: Int32, seed: UInt64) {
        self.core = core
        client = clientFD
        schedule = ConnectionSchedule(profile: core.configuration.profile, seed: seed, openedAt: monotonicSeconds())
    }

    deinit { scratch.deallocate() }

    func run() {
        let handshakeStalls = [schedule.syn, schedule.synAck].filter { $0.losses > 0 }
        if !handshakeStalls.isEmpty {
            core.counters.update {
                $0.stalls += handshakeStalls.count
                $0.stallSeconds += handshakeStalls.reduce(0) { $0 + $1.stall }
            }
        }
        if let resetAt = schedule.resetAt, resetAt <= schedule.openedAt {
            Socket.abort(client)
            core.counters.update { $0.resets += 1 }
            return
        }
        // Real TCP hands the server a connection only once the handshake is done, so the
        // upstream is contacted when the simulated one completes: the server's clock for the
        // request head starts then, not while SYNs are still being retransmitted.
        let handshakeDone = min(schedule.establishedAt, schedule.resetAt ?? .infinity)
        guard waitUntil(handshakeDone) else {
            Socket.abort(client)
            return
        }
        if let resetAt = schedule.resetAt, resetAt <= handshakeDone {
            Socket.abort(client)
            core.counters.update { $0.resets += 1 }
            return
        }
        let configuration = core.configuration
        do {
            upstream = try Socket.connect(
                to: configuration.upstream, timeout: configuration.connectTimeout.seconds, wakeFD: core.wakeFD)
        } catch {
            // The client gets an RST, as it would from a server that is not there.
            Socket.abort(client)
            if !core.isStopping {
                core.counters.update { $0.upstreamFailures += 1 }
                configuration.diagnostics(error.message)
            }
            return
        }
        var pipes = [
            Pipe(source: client, destination: upstream, schedule: schedule.uplink),
            Pipe(source: upstream, destination: client, schedule: schedule.downlink),
        ]
        let outcome = pump(&pipes, limit: max(1, configuration.queueLimitBytes))
        switch outcome {
        case .finished, .stopped:
            close(client)
            close(upstream)
        case .reset:
            Socket.abort(client)
            Socket.abort(upstream)
            core.counters.update { $0.resets += 1 }
        case .failed:
            // One side reset or vanished: pass that on as a reset to the other.
            Socket.abort(client)
            Socket.abort(upstream)
        }
    }

    /// Sleeps until `time` (monotonic seconds); false when `stop()` came first.
    private func waitUntil(_ time: Double) -> Bool {
        var wake = pollfd(fd: core.wakeFD, events: Int16(POLLIN), revents: 0)
        while true {
            let left = time - monotonicSeconds()
            if left <= 0 { return true }
            wake.revents = 0
            let ready = poll(&wake, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
            if ready > 0 { return false }
            if ready < 0 && errno != EINTR { return true }
        }
    }

    private enum Outcome {
        /// Both directions delivered their end of stream.
        case finished
        /// The proxy is stopping.
        case stopped
        /// The profile's reset time came.
        case reset
        /// A read or write failed (a peer reset or closed its reading side).
        case failed
    }

    /// The loop: deliver what is due, then sleep in `poll` until data, writability, the next
    /// release, the reset time, or `stop()`.
    private func pump(_ pipes: inout [Pipe], limit: Int) -> Outcome {
        var fds = [pollfd](repeating: pollfd(), count: 3)
        while true {
            let now = monotonicSeconds()
            if let resetAt = schedule.resetAt, now >= resetAt { return .reset }
            for index in pipes.indices {
                guard let written = pipes[index].flush(now: now) else { return .failed }
                if written > 0 {
                    core.counters.update {
                        if index == 0 { $0.uplinkBytes += written } else { $0.downlinkBytes += written }
                    }
                }
            }
            if pipes.allSatisfy(\.destinationShut) { return .finished }

            let clientEvents =
                (pipes[0].wantsRead(limit: limit) ? POLLIN : 0) | (pipes[1].awaitingWritable ? POLLOUT : 0)
            let upstreamEvents =
                (pipes[1].wantsRead(limit: limit) ? POLLIN : 0) | (pipes[0].awaitingWritable ? POLLOUT : 0)
            fds[0] = pollfd(fd: core.wakeFD, events: Int16(POLLIN), revents: 0)
            // A negative descriptor is skipped by poll: one with nothing to wait for must not
            // wake the loop with POLLHUP over and over.
            fds[1] = pollfd(fd: clientEvents == 0 ? -1 : client, events: Int16(clientEvents), revents: 0)
            fds[2] = pollfd(fd: upstreamEvents == 0 ? -1 : upstream, events: Int16(upstreamEvents), revents: 0)
            let deadlines = [schedule.resetAt, pipes[0].nextDeadline, pipes[1].nextDeadline].compactMap { $0 }
            let timeout = deadlines.min().map { Int32(min(max(0, ($0 - now) * 1000), 60_000).rounded(.up)) } ?? -1
            if poll(&fds, 3, timeout) < 0 {
                if errno == EINTR { continue }
                core.configuration.diagnostics("poll failed: \(describeErrno(errno))")
                return .failed
            }
            if fds[0].revents != 0 { return .stopped }
            let readAt = monotonicSeconds()
            for (slot, reader, writer) in [(1, 0, 1), (2, 1, 0)] where fds[slot].revents != 0 {
                // Writability, an error or a hang-up: the next flush finds out which.
                pipes[writer].awaitingWritable = false
                if pipes[reader].wantsRead(limit: limit) {
                    guard let releases = pipes[reader].receive(into: scratch, limit: limit, at: readAt) else {
                        return .failed
                    }
                    let stalled = releases.filter { $0.losses > 0 }
                    if !stalled.isEmpty {
                        core.counters.update {
                            $0.stalls += stalled.count
                            $0.stallSeconds += stalled.reduce(0) { $0 + $1.stall }
                        }
                    }
                }
            }
        }
    }
}

/// One direction of a connection: what was read from `source` and waits to be written to
/// `destination`, with the schedule that says when.
struct Pipe {
    let source: Int32
    let destination: Int32
    var schedule: LinkSchedule<SplitMix64>
    private var pending = PendingBytes()
    private var sourceOpen = true
    private var endReleaseAt: Double?
    private(set) var destinationShut = false
    /// A write would block; wait for POLLOUT before trying again.
    var awaitingWritable = false

    init(source: Int32, destination: Int32, schedule: LinkSchedule<SplitMix64>) {
        self.source = source
        self.destination = destination
        self.schedule = schedule
    }

    func wantsRead(limit: Int) -> Bool { sourceOpen && pending.count < limit }

    /// When this direction next has something to do without any I/O event: the next release,
    /// or the end of stream.
    var nextDeadline: Double? {
        if awaitingWritable { return nil }
        if let release = pending.nextReleaseAt { return release }
        return destinationShut ? nil : endReleaseAt
    }

    /// Reads what is there (up to the room left under `limit`) and schedules it. Returns the
    /// segments scheduled (empty at the end of stream or when nothing was there), or `nil` when
    /// the read failed.
    mutating func receive(into scratch: UnsafeMutableRawBufferPointer, limit: Int, at now: Double) -> [SegmentRelease]?
    {
        let room = min(scratch.count, limit - pending.count)
        let count = read(source, scratch.baseAddress, room)
        if count > 0 {
            let releases = schedule.bytesArrived(count, at: now)
            pending.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]), releases: releases)
            return releases
        }
        if count == 0 {
            sourceOpen = false
            endReleaseAt = schedule.endArrived(at: now)
            return []
        }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? [] : nil
    }

    /// Writes every byte whose release time has come, then passes the end of stream on (shut
    /// down writing) once it is due and nothing is left. Returns the bytes written, or `nil`
    /// when the write failed.
    mutating func flush(now: Double) -> Int? {
        var written = 0
        while !awaitingWritable {
            let due = pending.dueCount(at: now)
            if due == 0 { break }
            let count = pending.withBytes(due) { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                pending.consume(count)
                written += count
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                awaitingWritable = true
            } else if errno != EINTR {
                return nil
            }
        }
        if pending.count == 0, let endReleaseAt, endReleaseAt <= now, !destinationShut {
            shutdown(destination, Int32(SHUT_WR))
            destinationShut = true
        }
        return written
    }
}

/// Bytes waiting to be written, in one buffer, with the release time of each segment's end.
struct PendingBytes {
    private struct Mark {
        var end: Int
        var releaseAt: Double
    }

    private var buffer: [UInt8] = []
    private var start = 0
    private var marks: [Mark] = []
    private var firstMark = 0

    /// Bytes not yet written.
    var count: Int { buffer.count - start }

    /// The release time of the first segment not wholly written.
    var nextReleaseAt: Double? { firstMark < marks.count ? marks[firstMark].releaseAt : nil }

    mutating func append(_ bytes: UnsafeRawBufferPointer, releases: [SegmentRelease]) {
        var end = buffer.count
        buffer.append(contentsOf: bytes)
        for release in releases {
            end += release.byteCount
            marks.append(Mark(end: end, releaseAt: release.releaseAt))
        }
    }

    /// How many bytes from the front may be written at `now`. Release times never decrease,
    /// so the released segments are a prefix.
    func dueCount(at now: Double) -> Int {
        var end = start
        var index = firstMark
        while index < marks.count, marks[index].releaseAt <= now {
            end = marks[index].end
            index += 1
        }
        return end - start
    }

    func withBytes<T>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)])) }
    }

    mutating func consume(_ count: Int) {
        start += count
        while firstMark < marks.count, marks[firstMark].end <= start { firstMark += 1 }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            marks.removeAll(keepingCapacity: true)
            start = 0
            firstMark = 0
        } else if start >= 64 * 1024, start * 2 >= buffer.count {
            buffer.removeFirst(start)
            marks.removeFirst(firstMark)
            for index in marks.indices { marks[index].end -= start }
            start = 0
            firstMark = 0
        }
    }
}
