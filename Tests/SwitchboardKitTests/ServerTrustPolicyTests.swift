import Foundation
import Testing
import SwitchboardKit

/// SPEC §4 rule 9: a self-signed certificate is trusted for the one configured host only.
@Suite("Self-signed trust for one host", .timeLimit(.minutes(3)))
struct ServerTrustPolicyTests {
    static let der = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    static let pem =
        "-----BEGIN CERTIFICATE-----\n" + der.base64EncodedString(options: [.lineLength64Characters])
        + "\n-----END CERTIFICATE-----\n"

    @Test func theConfiguredHostWithThePinnedCertificateIsTrusted() throws {
        let policy = try ServerTrustPolicy(host: "calls.example.test", certificatePEM: Self.pem)
        #expect(policy.certificateDER == Self.der)
        #expect(policy.decision(host: "calls.example.test", leafCertificateDER: Self.der) == .trust)
        #expect(policy.decision(host: "CALLS.Example.TEST", leafCertificateDER: Self.der) == .trust)
    }

    @Test func anyOtherHostPresentingTheSameCertificateGetsOnlyTheSystemsTrust() {
        let policy = ServerTrustPolicy(host: "calls.example.test", certificateDER: Self.der)
        #expect(policy.decision(host: "evil.example.test", leafCertificateDER: Self.der) == .systemDefault)
        #expect(policy.decision(host: "calls.example.test.evil.test", leafCertificateDER: Self.der) == .systemDefault)
    }

    @Test func theConfiguredHostWithAnotherCertificateGetsOnlyTheSystemsTrust() {
        let policy = ServerTrustPolicy(host: "calls.example.test", certificateDER: Self.der)
        var other = Self.der
        other[10] ^= 1
        #expect(policy.decision(host: "calls.example.test", leafCertificateDER: other) == .systemDefault)
        #expect(policy.decision(host: "calls.example.test", leafCertificateDER: nil) == .systemDefault)
    }

    @Test(arguments: ["", "no certificate here", "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----"])
    func aBrokenPEMIsAClearError(_ text: String) {
        #expect(throws: ServerTrustPolicy.InvalidCertificate.self) {
            try ServerTrustPolicy(host: "h", certificatePEM: text)
        }
    }
}
