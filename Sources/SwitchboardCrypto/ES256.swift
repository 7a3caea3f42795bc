internal import CCrypto

/// An ECDSA P-256 private key for `ES256` signatures (RFC 7518 §3.4), such as the `.p8` key Apple
/// issues for APNs token authentication.
///
/// ```swift
/// let key = try ES256PrivateKey(pem: String(decoding: p8FileBytes, as: UTF8.self))
/// let token = try JWT.apnsProviderToken(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", issuedAt: now, key: key)
/// ```
/// One key may sign from many tasks at once.
///
/// `@unchecked Sendable` is safe because the `EVP_PKEY` is never modified after `init` returns:
/// `handle` is a `let`, and the only OpenSSL calls made with it afterwards are
/// `EVP_DigestSignInit` (inside ``sign(_:)``), `PEM_write_bio_PrivateKey` and `EVP_PKEY_free`
/// in `deinit`, which runs only once no reference remains. openssl-threads(7) for OpenSSL 3.0
/// says objects "are thread-safe as long as the API's being invoked don't modify the object",
/// that cached internal state is updated under locks, and that "two threads can calculate a
/// signature using two different EVP_PKEY_CTX objects". Each ``sign(_:)`` call makes its own
/// `EVP_MD_CTX` (and so its own `EVP_PKEY_CTX`). `EVP_DigestSignInit` takes a non-`const` key only
/// to raise its reference count (atomic) and to find the provider's copy of the key: in OpenSSL
/// 3.0's `evp_keymgmt_util_export_to_provider` a provider-native key, which is what the decoder
/// and `EVP_PKEY_generate` make, is used as it is, and any export cache is read and filled under
/// the key's own lock. The ECDSA signer reads the key and uses a fresh nonce and scratch space
/// per call. (Checked against the 3.0 man page and source, and exercised by a concurrent test.)
public final class ES256PrivateKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The matching public key.
    public let publicKey: ES256PublicKey

    /// Loads a P-256 private key from PEM text: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, the APNs
    /// `.p8` format) or SEC 1 (`-----BEGIN EC PRIVATE KEY-----`).
    ///
    /// Throws ``CryptoError`` with ``CryptoError/Code/malformedInput`` for text that holds no
    /// readable private key (garbage, an empty string, a public key, an encrypted key: no passphrase
    /// is ever asked for) or a key that fails OpenSSL's consistency check (for example a public
    /// part that does not belong to the private scalar), and with
    /// ``CryptoError/Code/unsupportedParameters`` for any other kind of key (RSA, Ed25519, P-384,
    /// secp256k1…). Text before the PEM block, indentation and CRLF line ends are all accepted.
    public convenience init(pem: String) throws {
        let operation = "ES256PrivateKey(pem:)"
        let key = try PEM.privateKey(pem, operation: operation)
        try P256.require(key.pointer, operation: operation)
        try P256.check(key.pointer, includingPrivate: true, operation: operation)
        try self.init(sharing: key)
    }

    /// Makes a new random P-256 key, for tests and emulators; production keys come from Apple.
    public static func generate() throws -> ES256PrivateKey {
        let key = try EVPKey.generate("EC") { context throws(CryptoError) in
            try OpenSSL.check(EVP_PKEY_CTX_set_group_name(context, "P-256"), "EVP_PKEY_CTX_set_group_name")
        }
        return try ES256PrivateKey(sharing: key)
    }

    /// Takes its own reference to a validated P-256 key; `key` keeps (and frees) the caller's.
    private init(sharing key: OpenSSLObject) throws(CryptoError) {
        publicKey = try ES256PublicKey(trustedPEM: try EVPKey.publicPEM(key.pointer))
        handle = try EVPKey.retain(key)  // last: no throw can follow
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The public key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`, 64-column base64, final newline).
    public var publicKeyPEM: String { publicKey.pem }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `.p8` format.
    ///
    /// This is the secret itself: write it only where the key is meant to be stored.
    public func pkcs8PEM() throws -> String {
        try EVPKey.pkcs8PEM(handle)
    }

    /// Signs `message` with ECDSA P-256 over SHA-256 and returns the 64-byte JOSE signature
    /// `r || s`, each half big-endian and left-padded to 32 bytes.
    ///
    /// ECDSA is randomised: signing the same message twice gives different signatures, all valid.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        try ECDSASignature.raw(fromDER: try EVPKey.signSHA256(message, with: handle))
    }
}

/// An ECDSA P-256 public key that checks `ES256` signatures.
///
/// ```swift
/// let key = try ES256PublicKey(pem: spkiPEM)
/// key.verify(signature: signature, message: signingInput)   // true or false
/// ```
/// One key may verify from many tasks at once.
///
/// `@unchecked Sendable` is safe for the reasons given at ``ES256PrivateKey``: `handle` is a `let`
/// never modified after `init`; each ``verify(signature:message:)`` call uses its own
/// `EVP_MD_CTX`, and `EVP_DigestVerifyInit` only raises the reference count and reads (or fills,
/// under the key's lock) its provider cache.
public final class ES256PublicKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The key as SPKI PEM, as OpenSSL writes it (64-column base64, final newline).
    public let pem: String

    /// Loads a P-256 public key from SPKI PEM text (`-----BEGIN PUBLIC KEY-----`).
    ///
    /// Throws ``CryptoError`` with ``CryptoError/Code/malformedInput`` for text that holds no
    /// readable public key or a point that fails OpenSSL's check, and with
    /// ``CryptoError/Code/unsupportedParameters`` for any key that is not EC P-256.
    public convenience init(pem: String) throws {
        try self.init(pem: pem, checked: true)
    }

    /// Loads a public key that this module has just written itself, skipping the point check.
    convenience init(trustedPEM: String) throws(CryptoError) {
        try self.init(pem: trustedPEM, checked: false)
    }

    private init(pem text: String, checked: Bool) throws(CryptoError) {
        let operation = "ES256PublicKey(pem:)"
        let key = try PEM.publicKey(text, operation: operation)
        try P256.require(key.pointer, operation: operation)
        if checked { try P256.check(key.pointer, includingPrivate: false, operation: operation) }
        pem = try EVPKey.publicPEM(key.pointer)
        handle = try EVPKey.retain(key)  // last: no throw can follow
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// Whether `signature` is a valid 64-byte `r || s` ES256 signature of `message` by this key.
    ///
    /// `false` for any other length (DER signatures included), for `r` or `s` outside `1..<n`,
    /// and if OpenSSL fails for any reason. High-`s` signatures are accepted, as JOSE allows.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
        return EVPKey.verifySHA256(der, of: message, with: handle)
    }
}

/// Checks that an `EVP_PKEY` is an EC key on P-256 and passes OpenSSL's validation.
enum P256 {
    /// Throws ``CryptoError/Code/unsupportedParameters`` unless `key` is EC on the P-256 curve
    /// (`prime256v1`, `secp256r1`).
    static func require(_ key: OpaquePointer, operation: String) throws(CryptoError) {
        func unsupported(_ detail: String) -> CryptoError {
            CryptoError(code: .unsupportedParameters, operation: operation, detail: detail)
        }
        guard EVP_PKEY_is_a(key, "EC") == 1 else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw unsupported("key type \(type), not EC P-256")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            throw unsupported("an EC key without a named curve, not P-256")
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let nid = OBJ_sn2nid(curve)
        guard nid == NID_X9_62_prime256v1 || EC_curve_nist2nid(curve) == NID_X9_62_prime256v1 else {
            throw unsupported("curve \(curve), not P-256")
        }
    }

    /// Throws ``CryptoError/Code/malformedInput`` unless OpenSSL finds the key consistent: the
    /// public point on the curve and, with `includingPrivate`, the scalar in range and matching it.
    static func check(_ key: OpaquePointer, includingPrivate: Bool, operation: String) throws(CryptoError) {
        let context = try OpenSSLObject(
            EVP_PKEY_CTX_new_from_pkey(nil, key, nil), free: { EVP_PKEY_CTX_free($0) }, "EVP_PKEY_CTX_new_from_pkey")
        let result = includingPrivate ? EVP_PKEY_check(context.pointer) : EVP_PKEY_public_check(context.pointer)
        guard result == 1 else {
            let failure = OpenSSL.failure(includingPrivate ? "EVP_PKEY_check" : "EVP_PKEY_public_check")
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "key fails validation: \(failure.detail)")
        }
    }
}
