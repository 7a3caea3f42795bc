#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// Minimal JSON Web Tokens (RFC 7519) signed with HMAC-SHA256 (`HS256`) only.
///
/// The caller brings the JSON: this type signs and checks bytes and never interprets the claims,
/// so expiry (`exp`, `nbf`) and audience checks are the caller's job after ``verifyHS256(_:secret:)``.
/// ```swift
/// let claims = Array(#"{"sub":"user-42","exp":1900000000}"#.utf8)
/// let token = JWT.signHS256(claimsJSON: claims, secret: secret)
/// JWT.verifyHS256(token, secret: secret)      // claims
/// ```
/// Use a random secret of at least 32 bytes (`SecureRandom.bytes(32)`), as RFC 7518 §3.2 requires.
public enum JWT {
    /// Returns `base64url(header).base64url(claims).base64url(HMAC-SHA256(secret, first two parts))`.
    ///
    /// `headerJSON` is used byte for byte; it should name `"alg":"HS256"` or the token will not
    /// verify. An empty `secret` is a programmer error and traps.
    public static func signHS256(
        claimsJSON: [UInt8], secret: [UInt8], headerJSON: [UInt8] = Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)
    ) -> String {
        precondition(!secret.isEmpty, "JWT.signHS256: an empty secret signs tokens anyone can forge")
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature = HMAC.sha256(key: secret, message: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Returns the claims JSON bytes of `token` if its HS256 signature under `secret` is valid
    /// (compared in constant time) and its header is a JSON object whose `alg` is `"HS256"`;
    /// otherwise `nil`.
    ///
    /// Also `nil` for: anything but three dot-separated unpadded base64url parts, a header with a
    /// `crit` member (no extensions are understood), and an empty `secret`.
    public static func verifyHS256(_ token: String, secret: [UInt8]) -> [UInt8]? {
        guard !secret.isEmpty, let parts = Parts(token) else { return nil }
        guard ConstantTime.equals(HMAC.sha256(key: secret, message: parts.signingInput), parts.signature) else {
            return nil
        }
        guard parts.hasAlgorithm("HS256") else { return nil }
        return parts.claims
    }

    /// A compact JWS split and decoded: exactly three dot-separated unpadded base64url parts.
    struct Parts {
        let header: [UInt8]
        let claims: [UInt8]
        let signature: [UInt8]
        /// `header.claims` as sent: what the signature covers.
        let signingInput: [UInt8]

        init?(_ token: String) {
            guard !token.utf8.contains(UInt8(ascii: "=")) else { return nil }
            let parts = token.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 3,
                let header = Base64URL.decode(String(parts[0])),
                let claims = Base64URL.decode(String(parts[1])),
                let signature = Base64URL.decode(String(parts[2]))
            else { return nil }
            self.header = header
            self.claims = claims
            self.signature = signature
            signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        }

        /// Whether the header is a JSON object whose `alg` is `algorithm` and that has no
        /// `crit` member (no extensions are understood).
        func hasAlgorithm(_ algorithm: String) -> Bool {
            guard let decoded = try? JSONDecoder().decode(Header.self, from: Data(header)) else { return false }
            return decoded.alg == algorithm && decoded.crit == nil
        }
    }

    /// The header members checked; others are ignored.
    private struct Header: Decodable {
        let alg: String
        let crit: [String]?
    }
}
