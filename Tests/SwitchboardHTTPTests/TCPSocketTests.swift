import Glibc
import Testing
import SwitchboardPOSIX

/// The one TCP set-up every listener here goes through (HTTP server, APNs emulator, proxy).
@Suite("TCP sockets", .timeLimit(.minutes(1)))
struct TCPSocketTests {
    @Test func localhostListensOnIPv4LoopbackWithTheKernelsPort() throws {
        let (fd, address) = try TCPSocket.listen(host: "localhost", port: 0)
        defer { close(fd) }
        #expect(address.host == "127.0.0.1")
        #expect(address.port > 0)
        #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func ipv6LoopbackIsBracketedInItsDescription() throws {
        // Some CI containers have no IPv6 loopback; there is nothing to check on them.
        guard let (fd, address) = try? TCPSocket.listen(host: "::1", port: 0) else { return }
        defer { close(fd) }
        #expect(address.host == "::1")
        #expect(address.description == "[::1]:\(address.port)")
        #expect(SocketAddress.parse(address.description) == address)
    }

    @Test func aReservedPortIsSharedByEveryListenerOfTheGroupAndRefusedToAnyOtherSocket() throws {
        let port = try TCPSocket.reservePort(host: "127.0.0.1", port: 0)
        let first = try TCPSocket.listen(host: "127.0.0.1", port: port, sharedPort: true)
        defer { close(first.fd) }
        let second = try TCPSocket.listen(host: "127.0.0.1", port: port, sharedPort: true)
        defer { close(second.fd) }
        #expect(first.address == second.address)
        // A second server on the same port (its own reservation) fails instead of taking half
        // the connections.
        let refused = #expect(throws: SystemCallError.self) { try TCPSocket.reservePort(host: "127.0.0.1", port: port) }
        #expect(refused?.errno == EADDRINUSE)
        #expect(refused?.call.hasPrefix("bind 127.0.0.1:\(port)") == true)
    }

    @Test func anUnknownHostIsAClearErrorNotACrash() {
        let failure = #expect(throws: SystemCallError.self) {
            try TCPSocket.listen(host: "no-such-host.invalid", port: 0)
        }
        #expect(failure?.call.hasPrefix("getaddrinfo no-such-host.invalid") == true)
    }

    @Test func acceptReturnsNilWhenNothingWaitsAndANonBlockingNoDelaySocketWhenSomethingDoes() throws {
        let (listener, address) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        #expect(try TCPSocket.accept(listener) == nil)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var peer = sockaddr_in()
        peer.sin_family = sa_family_t(AF_INET)
        peer.sin_port = in_port_t(UInt16(address.port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr)
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        // The handshake is done by the kernel; wait for the listener to become readable.
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        #expect(poll(&ready, 1, 30_000) == 1)
        let accepted = try #require(try TCPSocket.accept(listener))
        defer { close(accepted) }
        #expect(fcntl(accepted, F_GETFL) & O_NONBLOCK != 0)
        var noDelay: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, &length)
        #expect(noDelay != 0)
    }
}
