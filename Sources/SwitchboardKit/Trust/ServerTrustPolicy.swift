import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which server certificates the SDK trusts (SPEC §4 rule 9): the system's trust everywhere,
/// plus one self-signed certificate for the one configured host — never for any other host,
/// so a development certificate can never vouch for a stranger.
public struct ServerTrustPolicy: Sendable, Equatable {
    /// What to do with a TLS server's certificate.
    public enum Decision: Sendable, Equatable {
        /// Trust it (the configured host presented the pinned certificate).
        case trust
        /// Let the system judge it as usual.
        case systemDefault
    }

    public struct InvalidCertificate: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The host (lower-case, no port) that may present the certificate.
    public let host: String
    /// The certificate, DER bytes.
    public let certificateDER: Data

    public init(host: String, certificateDER: Data) {
        self.host = host.lowercased()
        self.certificateDER = certificateDER
    }

    /// From a PEM `-----BEGIN CERTIFICATE-----` block (the certificate of the TLS terminator in
    /// front of the server).
    public init(host: String, certificatePEM: String) throws(InvalidCertificate) {
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        guard let start = certificatePEM.range(of: begin),
            let stop = certificatePEM.range(of: end, range: start.upperBound..<certificatePEM.endIndex)
        else { throw InvalidCertificate(description: "no PEM certificate block") }
        let body = certificatePEM[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)), !der.isEmpty else {
            throw InvalidCertificate(description: "the PEM certificate is not valid base64")
        }
        self.init(host: host, certificateDER: der)
    }

    /// The decision for `host` presenting `leafCertificateDER` (nil when none could be read).
    public func decision(host candidate: String, leafCertificateDER: Data?) -> Decision {
        guard candidate.lowercased() == host, let leafCertificateDER, leafCertificateDER == certificateDER else {
            return .systemDefault
        }
        return .trust
    }
}

#if canImport(Security)
import Security

/// A transport whose `URLSession` applies a `ServerTrustPolicy` (Apple platforms, where
/// `URLSessionDelegate` sees the server's trust). The session keeps its delegate until
/// `invalidate()`: make one per app, or invalidate the one you replace.
public final class PinnedCertificateTransport: HTTPTransport {
    private let session: URLSession

    public init(policy: ServerTrustPolicy, configuration: URLSessionConfiguration = .ephemeral) {
        session = URLSession(
            configuration: configuration, delegate: PinnedTrustDelegate(policy: policy), delegateQueue: nil)
    }

    /// Lets requests in flight finish, then releases the session and its delegate.
    public func invalidate() {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }
}

/// Answers the server-trust challenge with the policy's decision.
final class PinnedTrustDelegate: NSObject, URLSessionDelegate, Sendable {
    let policy: ServerTrustPolicy

    init(policy: ServerTrustPolicy) {
        self.policy = policy
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrust
        else { return (.performDefaultHandling, nil) }
        let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate]
        let leaf = chain?.first.map { SecCertificateCopyData($0) as Data }
        switch policy.decision(host: challenge.protectionSpace.host, leafCertificateDER: leaf) {
        case .trust: return (.useCredential, URLCredential(trust: trust))
        case .systemDefault: return (.performDefaultHandling, nil)
        }
    }
}
#endif
