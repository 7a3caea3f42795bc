internal import CTLS
import Glibc

/// TLS over a non-blocking socket: owns the `SSL` (freed in `deinit`) and the socket.
///
/// The handshake runs inside the first reads and writes; `WANT_WRITE` makes the loop wait for
/// the socket to become writable.
final class TLSTransport: ConnectionTransport {
    private let ssl: OpaquePointer
    private var fd: Int32
    private var blockedOnWrite = false
    private var sentCloseNotify = false

    init(fd: Int32, context: TLSServerContext) throws(APNsEmulatorTLSError) {
        ssl = try TLSLibrary.nonNull(SSL_new(context.handle), "SSL_new")
        self.fd = fd
        try TLSLibrary.check(SSL_set_fd(ssl, fd), "SSL_set_fd")
        SSL_set_accept_state(ssl)
        switchboard_tls_set_nonblocking_modes(ssl)
    }

    deinit {
        close()
        SSL_free(ssl)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        guard count <= 0 else {
            blockedOnWrite = false
            return .transferred(Int(count))
        }
        return outcome(of: count, "SSL_read")
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransportResult {
        guard !bytes.isEmpty else { return .transferred(0) }
        ERR_clear_error()
        let count = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        guard count <= 0 else {
            blockedOnWrite = false
            return .transferred(Int(count))
        }
        return outcome(of: count, "SSL_write")
    }

    var wantsWritable: Bool { blockedOnWrite }

    var pollDescriptor: Int32? { fd >= 0 ? fd : nil }

    var hasBufferedInput: Bool { fd >= 0 && SSL_pending(ssl) > 0 }

    func shutdownWrite() {
        guard fd >= 0 else { return }
        sendCloseNotify()
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    func close() {
        guard fd >= 0 else { return }
        sendCloseNotify()
        Glibc.close(fd)
        fd = -1
    }

    /// Best effort close_notify, once; the socket is non-blocking, so this never waits.
    private func sendCloseNotify() {
        guard !sentCloseNotify, SSL_is_init_finished(ssl) == 1 else { return }
        sentCloseNotify = true
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func outcome(of result: Int32, _ operation: String) -> TransportResult {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            blockedOnWrite = true
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN, SSL_ERROR_SYSCALL:
            ERR_clear_error()
            return .closed
        default:
            return .failed(TLSLibrary.failure(operation).description)
        }
    }
}
