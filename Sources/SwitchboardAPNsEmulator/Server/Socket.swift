import Glibc
import SwitchboardPOSIX

/// The emulator's system-call failures are the shared `SystemCallError`.
public typealias APNsEmulatorSystemError = SystemCallError

/// What a transport read or write did.
enum TransportResult {
    case transferred(Int)
    case wouldBlock
    case closed
    case failed(String)
}

/// Moves bytes between a connection and its socket: plain TCP for h2c, or TLS.
protocol ConnectionTransport: AnyObject {
    /// Reads into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult
    /// Writes a prefix of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) -> TransportResult
    /// Whether the transport itself waits for the socket to become writable (a TLS handshake).
    var wantsWritable: Bool { get }
    /// The socket to poll, or `nil` once closed.
    var pollDescriptor: Int32? { get }
    /// Whether input is buffered above the socket (decrypted TLS records), so polling the
    /// socket would not report it.
    var hasBufferedInput: Bool { get }
    /// Ends the sending direction (TLS close_notify, then a TCP FIN) but keeps reading, so
    /// bytes the peer sent meanwhile do not turn the close into a reset that could destroy
    /// the last responses and GOAWAY before the peer reads them.
    func shutdownWrite()
    /// Closes the socket.
    func close()
}

/// Cleartext TCP (h2c with prior knowledge): owns the socket and closes it once.
final class PlainTransport: ConnectionTransport {
    private var fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        do {
            let count = try systemCall("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
            return count == 0 ? .closed : .transferred(count)
        } catch {
            return Self.result(of: error)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransportResult {
        do {
            return .transferred(
                try systemCall("send") { send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) })
        } catch {
            return Self.result(of: error)
        }
    }

    var wantsWritable: Bool { false }

    var pollDescriptor: Int32? { fd >= 0 ? fd : nil }

    var hasBufferedInput: Bool { false }

    func shutdownWrite() {
        if fd >= 0 { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    static func result(of error: APNsEmulatorSystemError) -> TransportResult {
        switch error.errno {
        case EAGAIN, EWOULDBLOCK: .wouldBlock
        case ECONNRESET, EPIPE: .closed
        default: .failed(error.description)
        }
    }
}
