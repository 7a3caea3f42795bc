import Foundation
import Glibc

/// Runs blocking work on a thread of its own, so it never occupies Swift's cooperative pool
/// (two threads on this machine), which the server under test needs for its handlers.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

/// ``offPool(_:)`` for blocking work that can throw; its error is rethrown.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result(catching: work)) }
    }
}

/// A loopback client for live tests: raw bytes in, raw bytes out, with deadlines. Reads block
/// on a dedicated thread (see `offPool`).
public final class RawClient: Sendable {
    let fd: Int32

    /// Connects to `host:port` (IPv4).
    public init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            close(fd)
            throw ConnectError(errno: errno)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Ends the connection both ways now (the descriptor is closed when the client is freed).
    public func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends text.
    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends bytes (blocking until written or the peer is gone).
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Reads until the peer closes, the timeout passes, or `until` says the bytes are enough.
    public func receive(
        timeout: Double = generousWait, until done: @escaping @Sendable (String) -> Bool = { _ in false }
    ) async -> (text: String, closed: Bool) {
        await offPool { self.receiveBlocking(timeout: timeout, until: done) }
    }

    private func receiveBlocking(timeout: Double, until done: (String) -> Bool) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poll, 1, 50)
            if ready <= 0 { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received.append(contentsOf: buffer[0..<count])
            if done(String(decoding: received, as: UTF8.self)) { break }
        }
        return (String(decoding: received, as: UTF8.self), false)
    }

    /// Reads bytes until the peer closes or the timeout passes.
    public func receiveBytes(timeout: Double = generousWait) async -> (bytes: [UInt8], closed: Bool) {
        await offPool {
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(timeout)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline {
                var poll = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
                if Glibc.poll(&poll, 1, 50) <= 0 { continue }
                let count = read(self.fd, &buffer, buffer.count)
                if count <= 0 { return (received, true) }
                received.append(contentsOf: buffer[0..<count])
            }
            return (received, false)
        }
    }

    /// Reads `count` complete fixed-length responses.
    public func receiveResponses(_ count: Int, timeout: Double = generousWait) async -> [String] {
        let result = await receive(timeout: timeout) { Self.splitResponses($0).count >= count }
        return Self.splitResponses(result.text)
    }

    /// Splits a byte stream of Content-Length responses into whole responses.
    public static func splitResponses(_ text: String) -> [String] {
        var responses: [String] = []
        var rest = Substring(text)
        while let headEnd = rest.range(of: "\r\n\r\n") {
            let head = rest[..<headEnd.lowerBound]
            var length = 0
            for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            let bodyStart = headEnd.upperBound
            guard rest.distance(from: bodyStart, to: rest.endIndex) >= length else { break }
            let end = rest.index(bodyStart, offsetBy: length)
            responses.append(String(rest[..<end]))
            rest = rest[end...]
        }
        return responses
    }
}

/// A failed `connect`.
public struct ConnectError: Error, Sendable {
    /// The `errno` value.
    public let errno: Int32
}
