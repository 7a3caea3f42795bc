import Foundation
import Glibc
import Synchronization
import SwitchboardTesting

/// Where two byte arrays first differ (an index into both, or the shorter one's count), or `nil`
/// when they are equal. For large payloads, where `#expect(a == b)` would make Swift Testing
/// diff a million elements on failure.
func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
    let common = min(a.count, b.count)
    for index in 0..<common where a[index] != b[index] { return index }
    return a.count == b.count ? nil : common
}

/// The number of open descriptors of this process.
/// This process's TCP sockets whose local port is `localPort` or whose peer's port is
/// `peerPort`: the descriptors one proxy owns, unlike a process-wide count, which tests running
/// in parallel disturb.
func socketDescriptors(localPort: Int, peerPort: Int) -> [Int32] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.compactMap(Int32.init).filter { fd in
        func port(_ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fd, $0, &length) }
            }
            guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
            return Int(UInt16(bigEndian: address.sin_port))
        }
        return port(getsockname) == localPort || port(getpeername) == peerPort
    }
}

/// A loopback TCP echo server: one thread accepts, one thread per connection echoes until the
/// client ends its side, then ends its own.
final class EchoServer: Sendable {
    let port: Int
    private let listenFD: Int32
    private let state = Mutex((accepted: 0, open: 0, firstAcceptedAt: ContinuousClock.Instant?.none))
    private let acceptorDone = DispatchSemaphore(value: 0)

    init() throws {
        let (fd, port) = try TestSocket.listen()
        listenFD = fd
        self.port = port
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listenFD, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    break
                }
                let now = ContinuousClock.now
                state.withLock {
                    $0.accepted += 1
                    $0.open += 1
                    if $0.firstAcceptedAt == nil { $0.firstAcceptedAt = now }
                }
                Thread.detachNewThread { [self] in
                    echo(client)
                    state.withLock { $0.open -= 1 }
                }
            }
            acceptorDone.signal()
        }
    }

    /// Connections accepted so far.
    var accepted: Int { state.withLock { $0.accepted } }
    /// When the first connection was accepted.
    var firstAcceptedAt: ContinuousClock.Instant? { state.withLock { $0.firstAcceptedAt } }
    /// Connections still being echoed.
    var openConnections: Int { state.withLock { $0.open } }

    private func echo(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        loop: while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            if !TestSocket.sendAll(fd, Array(buffer[0..<count])) { break loop }
        }
        shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }

    /// Stops accepting (connections being echoed run until their clients end).
    func stop() {
        shutdown(listenFD, Int32(SHUT_RDWR))
        acceptorDone.wait()
        close(listenFD)
    }
}

/// Blocking loopback sockets for the tests.
enum TestSocket {
    enum End: Equatable {
        case endOfStream
        case reset
        case timeout
        case error(Int32)
    }

    /// A blocking listener on 127.0.0.1 with a kernel-chosen port.
    static func listen() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            close(fd)
            throw TestFailure("cannot listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port nothing listens on (bound, then closed).
    static func unusedPort() throws -> Int {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    /// A blocking client connected to 127.0.0.1:`port`, with a generous receive timeout (a read
    /// that waits that long ends as `.timeout`).
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            let code = errno
            close(fd)
            throw TestFailure("connect to \(port): errno \(code)", errno: code)
        }
        var timeout = timeval(tv_sec: Int(generousWait), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Writes everything; `false` when the peer is gone.
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0, errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// Reads until `count` bytes arrived (or, with `nil`, until the stream ends) and says how
    /// the reading ended.
    static func receive(_ fd: Int32, count: Int? = nil) -> (bytes: [UInt8], end: End?) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while count.map({ received.count < $0 }) ?? true {
            let wanted = count.map { min(buffer.count, $0 - received.count) } ?? buffer.count
            let got = read(fd, &buffer, wanted)
            if got > 0 {
                received.append(contentsOf: buffer[0..<got])
            } else if got == 0 {
                return (received, .endOfStream)
            } else {
                switch errno {
                case EINTR: continue
                case ECONNRESET: return (received, .reset)
                case EAGAIN, EWOULDBLOCK: return (received, .timeout)
                default: return (received, .error(errno))
                }
            }
        }
        return (received, nil)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// A failure inside a test helper.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    let errno: Int32

    init(_ description: String, errno: Int32 = 0) {
        self.description = description
        self.errno = errno
    }
}
