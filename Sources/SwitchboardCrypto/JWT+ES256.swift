#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// `ES256` (ECDSA P-256 with SHA-256) JSON Web Tokens, as APNs token authentication requires.
///
/// As with HS256 the caller brings the JSON bytes and checks the claims itself:
/// ```swift
/// let token = try JWT.signES256(headerJSON: Array(#"{"alg":"ES256"}"#.utf8), claimsJSON: claims, key: key)
/// if let (header, claims) = JWT.verifyES256(token, key: key.publicKey) { … }
/// ```
extension JWT {
    /// Returns `base64url(header).base64url(claims).base64url(r || s)`, the ES256 signature (64
    /// bytes, RFC 7518 §3.4) of the first two parts under `key`.
    ///
    /// `headerJSON` is used byte for byte; it should name `"alg":"ES256"` or the token will not
    /// verify. Throws ``CryptoError`` only if OpenSSL fails to sign.
    public static func signES256(headerJSON: [UInt8], claimsJSON: [UInt8], key: ES256PrivateKey) throws -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Returns the header and claims JSON bytes of `token` if its header is a JSON object whose
    /// `alg` is `"ES256"` and its signature is a valid 64-byte ES256 signature under `key`;
    /// otherwise `nil`.
    ///
    /// Also `nil` for: anything but three dot-separated unpadded base64url parts, a header with a
    /// `crit` member (no extensions are understood), and a DER-encoded signature.
    public static func verifyES256(_ token: String, key: ES256PublicKey) -> (header: [UInt8], claims: [UInt8])? {
        guard let parts = Parts(token) else { return nil }
        // The header is checked first: it is cheaper than the signature and rejects alg confusion.
        guard parts.hasAlgorithm("ES256") else { return nil }
        guard key.verify(signature: parts.signature, message: parts.signingInput) else { return nil }
        return (parts.header, parts.claims)
    }

    /// Returns an APNs provider authentication token: header `{"alg":"ES256","kid":keyID}` and
    /// claims `{"iss":teamID,"iat":issuedAt}`, exactly in that member order, signed with the `.p8`
    /// key.
    ///
    /// `issuedAt` is UNIX seconds; APNs rejects a token older than an hour and one refreshed more
    /// often than every 20 minutes, so the caller caches and reuses it. Throws ``CryptoError``
    /// with ``CryptoError/Code/malformedInput`` unless `teamID` and `keyID` are each 10 ASCII
    /// letters or digits, the form Apple issues (this catches a stray newline from a config file).
    /// ```swift
    /// let token = try JWT.apnsProviderToken(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", issuedAt: 1_700_000_000, key: key)
    /// // authorization: bearer \(token)
    /// ```
    public static func apnsProviderToken(
        teamID: String, keyID: String, issuedAt: Int64, key: ES256PrivateKey
    )
        throws -> String
    {
        for (name, value) in [("teamID", teamID), ("keyID", keyID)] {
            let bytes = Array(value.utf8)
            let isAlphanumeric = bytes.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            }
            guard bytes.count == 10, isAlphanumeric else {
                throw CryptoError(
                    code: .malformedInput, operation: "JWT.apnsProviderToken",
                    detail: "\(name) must be 10 ASCII letters or digits, got \(bytes.count) bytes")
            }
        }
        // Only letters and digits are interpolated, so no JSON escaping is needed.
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#
        return try signES256(headerJSON: Array(header.utf8), claimsJSON: Array(claims.utf8), key: key)
    }
}
