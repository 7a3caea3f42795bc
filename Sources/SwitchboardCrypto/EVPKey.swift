internal import CCrypto

/// What the `ES256` and `RS256` keys do alike with their `EVP_PKEY`: make one, keep a reference,
/// sign and verify with SHA-256, and write PEM. Each key type checks its own kind of key and
/// keeps its own signature format (ECDSA's DER becomes JOSE's `r || s`; RSA's is as it is).
enum EVPKey {
    /// A new key of `algorithm` (`EC`, `RSA`), set up by `configure` (the curve, the bits)
    /// before it is generated.
    static func generate(
        _ algorithm: String, configure: (OpaquePointer) throws(CryptoError) -> Void
    ) throws(CryptoError) -> OpenSSLObject {
        let context = try OpenSSLObject(
            EVP_PKEY_CTX_new_from_name(nil, algorithm, nil), free: { EVP_PKEY_CTX_free($0) },
            "EVP_PKEY_CTX_new_from_name")
        try OpenSSL.check(EVP_PKEY_keygen_init(context.pointer), "EVP_PKEY_keygen_init")
        try configure(context.pointer)
        var generated: OpaquePointer?
        guard EVP_PKEY_generate(context.pointer, &generated) == 1 else {
            EVP_PKEY_free(generated)  // NULL on failure in practice; freeing NULL is a no-op.
            throw OpenSSL.failure("EVP_PKEY_generate")
        }
        return try OpenSSLObject(generated, free: { EVP_PKEY_free($0) }, "EVP_PKEY_generate")
    }

    /// A reference of the caller's own to `key` (freed with `EVP_PKEY_free`). Take it last in an
    /// initialiser, so no throw can follow and the object's `deinit` frees it.
    static func retain(_ key: OpenSSLObject) throws(CryptoError) -> OpaquePointer {
        try OpenSSL.check(EVP_PKEY_up_ref(key.pointer), "EVP_PKEY_up_ref")
        return key.pointer
    }

    /// The public half as SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    static func publicPEM(_ key: OpaquePointer) throws(CryptoError) -> String {
        try PEM.written("PEM_write_bio_PUBKEY") { PEM_write_bio_PUBKEY($0, key) }
    }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`): the secret itself.
    static func pkcs8PEM(_ key: OpaquePointer) throws(CryptoError) -> String {
        try PEM.written("PEM_write_bio_PrivateKey") { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    /// `message`'s SHA-256 digest signature under `key`, as OpenSSL writes it (DER for ECDSA).
    /// Each call makes its own `EVP_MD_CTX`, so one key signs from many threads at once.
    static func signSHA256(_ message: [UInt8], with key: OpaquePointer) throws(CryptoError) -> [UInt8] {
        let context = try OpenSSLObject(EVP_MD_CTX_new(), free: { EVP_MD_CTX_free($0) }, "EVP_MD_CTX_new")
        try OpenSSL.check(EVP_DigestSignInit(context.pointer, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key)))
        var length = signature.count
        let result = message.withNonNullBytes { bytes, count in
            signature.withUnsafeMutableBufferPointer { output in
                EVP_DigestSign(
                    context.pointer, output.baseAddress, &length, bytes.assumingMemoryBound(to: UInt8.self), count)
            }
        }
        try OpenSSL.check(result, "EVP_DigestSign")
        return Array(signature.prefix(length))
    }

    /// Whether `signature` (as OpenSSL reads it: DER for ECDSA) is `message`'s SHA-256 digest
    /// signature under `key`; `false` too when OpenSSL fails for any reason.
    static func verifySHA256(_ signature: [UInt8], of message: [UInt8], with key: OpaquePointer) -> Bool {
        defer { ERR_clear_error() }  // A rejected signature leaves entries that are not errors here.
        guard let context = try? OpenSSLObject(EVP_MD_CTX_new(), free: { EVP_MD_CTX_free($0) }, "EVP_MD_CTX_new"),
            EVP_DigestVerifyInit(context.pointer, nil, EVP_sha256(), nil, key) == 1
        else { return false }
        let result = message.withNonNullBytes { bytes, count in
            EVP_DigestVerify(
                context.pointer, signature, signature.count, bytes.assumingMemoryBound(to: UInt8.self), count)
        }
        return result == 1
    }
}
