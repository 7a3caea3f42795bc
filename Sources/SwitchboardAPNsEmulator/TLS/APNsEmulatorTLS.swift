/// TLS settings for an ``APNsEmulator``: at start it makes a self-signed P-256 certificate for
/// these names and serves TLS 1.2+ with ALPN `h2` only (a client that does not offer `h2` is
/// refused during the handshake, as APNs speaks nothing else).
///
/// ```swift
/// var configuration = APNsEmulatorConfiguration(port: 0)
/// configuration.tls = APNsEmulatorTLS()
/// let emulator = APNsEmulator(configuration: configuration)
/// try emulator.start()
/// try emulator.certificatePEM!.write(toFile: "emulator-ca.pem", atomically: true, encoding: .utf8)
/// ```
public struct APNsEmulatorTLS: Sendable, Hashable {
    /// DNS names in the certificate's subjectAltName.
    public var dnsNames: [String]
    /// IP addresses in the certificate's subjectAltName.
    public var ipAddresses: [String]
    /// How long the certificate is valid from one hour before start.
    public var validityDays: Int

    /// Creates settings for `localhost`, `127.0.0.1` and `::1`, valid for 30 days.
    public init(
        dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1", "::1"], validityDays: Int = 30
    ) {
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
        self.validityDays = validityDays
    }
}

/// OpenSSL could not make the certificate or the TLS context; carries OpenSSL's messages.
public struct APNsEmulatorTLSError: Error, Sendable, CustomStringConvertible {
    /// The OpenSSL call that failed.
    public let operation: String
    /// OpenSSL's error queue, oldest first.
    public let detail: String
    /// `"<operation> failed: <detail>"`.
    public var description: String { "\(operation) failed: \(detail)" }
}
