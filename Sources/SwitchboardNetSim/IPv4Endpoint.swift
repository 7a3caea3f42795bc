import Glibc

/// An IPv4 address and port, written `HOST:PORT` where HOST is a dotted IPv4 literal or
/// `localhost` (taken as 127.0.0.1).
///
/// ```swift
/// let upstream = try IPv4Endpoint.parse("127.0.0.1:8080")
/// ```
public struct IPv4Endpoint: Sendable, Equatable, CustomStringConvertible {
    /// The dotted IPv4 address.
    public var host: String
    /// The port; 0 asks the kernel for a free one when listening.
    public var port: Int

    /// Creates an endpoint; `parse` checks the text, this does not.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `127.0.0.1` with the given port.
    public static func loopback(port: Int) -> IPv4Endpoint {
        IPv4Endpoint(host: "127.0.0.1", port: port)
    }

    /// `host:port`.
    public var description: String { "\(host):\(port)" }

    /// Whether the address is in 127.0.0.0/8.
    public var isLoopback: Bool {
        guard let address = try? address() else { return false }
        return UInt32(bigEndian: address.s_addr) >> 24 == 127
    }

    /// Parses `HOST:PORT` (`:PORT` means 127.0.0.1). `role` names the value in the error, as in
    /// "upstream 'x:1': …".
    public static func parse(_ text: String, role: String = "address") throws(NetSimError) -> IPv4Endpoint {
        guard let colon = text.lastIndex(of: ":") else {
            throw NetSimError(.badAddress, "\(role) '\(text)' must be HOST:PORT")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        if host.isEmpty || host == "localhost" { host = "127.0.0.1" }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw NetSimError(.badAddress, "\(role) '\(text)': the port must be a number in 0...65535")
        }
        let endpoint = IPv4Endpoint(host: host, port: port)
        _ = try endpoint.address(role: role)
        return endpoint
    }

    /// The host as an `in_addr`, or an error naming the role.
    func address(role: String = "address") throws(NetSimError) -> in_addr {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw NetSimError(
                .badAddress,
                "\(role) '\(description)': the host must be an IPv4 address such as 127.0.0.1, or localhost")
        }
        return address
    }

    /// The `sockaddr_in` for this endpoint.
    func socketAddress(role: String = "address") throws(NetSimError) -> sockaddr_in {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        socketAddress.sin_addr = try address(role: role)
        return socketAddress
    }
}
