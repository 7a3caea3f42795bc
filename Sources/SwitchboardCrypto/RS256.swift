internal import CCrypto

/// An RSA private key for `RS256` signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3),
/// such as the `private_key` of a Google service account, which signs FCM's OAuth2 assertions.
///
/// ```swift
/// let key = try RS256PrivateKey(pem: serviceAccount.privateKey)
/// let token = try JWT.signRS256(headerJSON: header, claimsJSON: claims, key: key)
/// ```
/// One key may sign from many tasks at once.
// @unchecked Sendable is safe: the only stored properties are `let`s (`handle`, an `EVP_PKEY`
// pointer, and `publicKey`, itself Sendable). After `init` the key is never modified: the only
// OpenSSL calls on it are `EVP_DigestSignInit` (in `sign`, on an `EVP_MD_CTX` made per call),
// `PEM_write_bio_PrivateKey` (which only reads) and `EVP_PKEY_free` in `deinit`, which runs once
// no reference remains. openssl-threads(7) (3.0) allows concurrent use of an object whose
// invoked APIs do not modify it, and two signatures with two EVP_PKEY_CTX at once; the RSA
// signer keeps no per-call state in the key (the same reasoning as ``ES256PrivateKey``).
public final class RS256PrivateKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The matching public key.
    public let publicKey: RS256PublicKey

    /// Loads an RSA private key of 2048 bits or more from PEM text (PKCS#8, as Google writes it,
    /// or PKCS#1 `-----BEGIN RSA PRIVATE KEY-----`).
    ///
    /// Throws ``CryptoError`` with ``CryptoError/Code/malformedInput`` for text holding no
    /// readable private key (an encrypted one included: no passphrase is asked for), and with
    /// ``CryptoError/Code/unsupportedParameters`` for a key that is not RSA or is shorter than
    /// 2048 bits.
    public convenience init(pem: String) throws {
        let operation = "RS256PrivateKey(pem:)"
        let key = try PEM.privateKey(pem, operation: operation)
        try RSAKey.require(key.pointer, operation: operation)
        try self.init(sharing: key)
    }

    /// Makes a new random 2048-bit key, for tests and emulators.
    public static func generate(bits: Int = 2048) throws -> RS256PrivateKey {
        let key = try EVPKey.generate("RSA") { context throws(CryptoError) in
            try OpenSSL.check(
                EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(max(bits, 2048))), "EVP_PKEY_CTX_set_rsa_keygen_bits")
        }
        return try RS256PrivateKey(sharing: key)
    }

    private init(sharing key: OpenSSLObject) throws(CryptoError) {
        publicKey = try RS256PublicKey(trustedPEM: try EVPKey.publicPEM(key.pointer))
        handle = try EVPKey.retain(key)  // last: no throw can follow
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The private key as unencrypted PKCS#8 PEM: the secret itself.
    public func pkcs8PEM() throws -> String {
        try EVPKey.pkcs8PEM(handle)
    }

    /// Signs `message` with RSASSA-PKCS1-v1_5 over SHA-256; the signature is as long as the modulus.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        try EVPKey.signSHA256(message, with: handle)
    }
}

/// An RSA public key that checks `RS256` signatures (an emulator checking FCM's OAuth2 assertions).
// @unchecked Sendable is safe: `handle` and `pem` are `let`s set once in `init`; `verify` makes
// its own `EVP_MD_CTX` per call and `EVP_DigestVerifyInit` only raises the key's reference count
// (atomic) and reads it, so concurrent verifications never modify shared state; `EVP_PKEY_free`
// runs only in `deinit`, once no reference remains (openssl-threads(7), as for ``ES256PublicKey``).
public final class RS256PublicKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The key as SPKI PEM, as OpenSSL writes it.
    public let pem: String

    /// Loads an RSA public key (2048 bits or more) from SPKI PEM text.
    public convenience init(pem: String) throws {
        try self.init(pem: pem, operation: "RS256PublicKey(pem:)")
    }

    convenience init(trustedPEM: String) throws(CryptoError) {
        try self.init(pem: trustedPEM, operation: "RS256PublicKey(pem:)")
    }

    private init(pem text: String, operation: String) throws(CryptoError) {
        let key = try PEM.publicKey(text, operation: operation)
        try RSAKey.require(key.pointer, operation: operation)
        pem = try EVPKey.publicPEM(key.pointer)
        handle = try EVPKey.retain(key)  // last: no throw can follow
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// Whether `signature` is a valid RS256 signature of `message` by this key.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        EVPKey.verifySHA256(signature, of: message, with: handle)
    }
}

/// Checks that an `EVP_PKEY` is RSA of at least 2048 bits.
enum RSAKey {
    static func require(_ key: OpaquePointer, operation: String) throws(CryptoError) {
        guard EVP_PKEY_is_a(key, "RSA") == 1 else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw CryptoError(code: .unsupportedParameters, operation: operation, detail: "key type \(type), not RSA")
        }
        let bits = EVP_PKEY_get_bits(key)
        guard bits >= 2048 else {
            throw CryptoError(
                code: .unsupportedParameters, operation: operation,
                detail: "an RSA key of \(bits) bits; at least 2048 are required")
        }
    }
}

extension JWT {
    /// Returns `base64url(header).base64url(claims).base64url(signature)` with the RS256 signature
    /// of the first two parts under `key`. `headerJSON` is used byte for byte.
    public static func signRS256(headerJSON: [UInt8], claimsJSON: [UInt8], key: RS256PrivateKey) throws -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        return signingInput + "." + Base64URL.encode(try key.sign(Array(signingInput.utf8)))
    }

    /// The header and claims of `token` if its header's `alg` is `"RS256"` and its signature
    /// verifies under `key`; otherwise `nil`.
    public static func verifyRS256(_ token: String, key: RS256PublicKey) -> (header: [UInt8], claims: [UInt8])? {
        guard let parts = Parts(token), parts.hasAlgorithm("RS256") else { return nil }
        guard key.verify(signature: parts.signature, message: parts.signingInput) else { return nil }
        return (parts.header, parts.claims)
    }
}
