internal import CCrypto

/// An Ed25519 public key (RFC 8032), 32 raw bytes, that checks the signatures of an app
/// server's push-gateway requests.
///
/// ```swift
/// let key = try Ed25519PublicKey(rawBytes: Base64URL.decode(registered) ?? [])
/// guard key.verify(signature: signature, message: canonicalRequest) else { throw … }
/// ```
// @unchecked Sendable is safe: `handle` and `rawBytes` are `let`s set once in `init`; `verify`
// makes its own `EVP_MD_CTX` per call and only reads the key (openssl-threads(7)); the key is
// freed only in `deinit`, once no reference remains.
public final class Ed25519PublicKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The key's 32 bytes.
    public let rawBytes: [UInt8]

    /// Loads a public key from its 32 raw bytes; throws ``CryptoError`` with
    /// ``CryptoError/Code/malformedInput`` for any other length, a y coordinate that is not
    /// reduced (y ≥ p), or a point of small order (OpenSSL copies the bytes without checking,
    /// and with such a key a forged signature can verify for every message).
    public init(rawBytes: [UInt8]) throws(CryptoError) {
        guard rawBytes.count == 32 else {
            throw CryptoError(
                code: .malformedInput, operation: "Ed25519PublicKey(rawBytes:)",
                detail: "\(rawBytes.count) bytes, not 32")
        }
        guard !Self.isWeak(rawBytes) else {
            throw CryptoError(
                code: .malformedInput, operation: "Ed25519PublicKey(rawBytes:)",
                detail: "a point of small order or not reduced")
        }
        guard let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, rawBytes, 32) else {
            throw CryptoError(
                code: .malformedInput, operation: "Ed25519PublicKey(rawBytes:)", detail: "not an Ed25519 public key")
        }
        handle = key
        self.rawBytes = rawBytes
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The y coordinates (little-endian, sign bit cleared) of the eight points of small order:
    /// 0, 1, p − 1 and the two of order 8.
    private static let smallOrderY: [[UInt8]] = {
        var pMinusOne = [UInt8](repeating: 0xFF, count: 32)
        pMinusOne[0] = 0xEC
        pMinusOne[31] = 0x7F
        var one = [UInt8](repeating: 0, count: 32)
        one[0] = 1
        return [
            [UInt8](repeating: 0, count: 32), one, pMinusOne,
            [
                0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
                0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05,
            ],
            [
                0xC7, 0x17, 0x6A, 0x70, 0x3D, 0x4D, 0xD8, 0x4F, 0xBA, 0x3C, 0x0B, 0x76, 0x0D, 0x10, 0x67, 0x0F,
                0x2A, 0x20, 0x53, 0xFA, 0x2C, 0x39, 0xCC, 0xC6, 0x4E, 0xC7, 0xFD, 0x77, 0x92, 0xAC, 0x03, 0x7A,
            ],
        ]
    }()

    /// A small-order point, or a y coordinate of p or more (p = 2²⁵⁵ − 19).
    static func isWeak(_ raw: [UInt8]) -> Bool {
        var y = raw
        y[31] &= 0x7F
        let unreduced = y[31] == 0x7F && y[1..<31].allSatisfy { $0 == 0xFF } && y[0] >= 0xED
        return unreduced || smallOrderY.contains(y)
    }

    /// Whether `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard signature.count == 64,
            let context = try? OpenSSLObject(EVP_MD_CTX_new(), free: { EVP_MD_CTX_free($0) }, "EVP_MD_CTX_new"),
            EVP_DigestVerifyInit(context.pointer, nil, nil, nil, handle) == 1
        else { return false }
        let result = message.withNonNullBytes { bytes, count in
            EVP_DigestVerify(
                context.pointer, signature, signature.count, bytes.assumingMemoryBound(to: UInt8.self), count)
        }
        return result == 1
    }
}

/// An Ed25519 private key: what an app server signs its gateway requests with (the SDK's
/// gateway client, tests, the demo).
// @unchecked Sendable is safe, as for ``Ed25519PublicKey``: set once, read by every signature.
public final class Ed25519PrivateKey: @unchecked Sendable {
    private let handle: OpaquePointer

    /// The matching public key.
    public let publicKey: Ed25519PublicKey
    /// The 32-byte seed: the secret itself.
    public let seed: [UInt8]

    /// The key of a 32-byte seed (RFC 8032's private key).
    public init(seed: [UInt8]) throws(CryptoError) {
        guard seed.count == 32 else {
            throw CryptoError(
                code: .malformedInput, operation: "Ed25519PrivateKey(seed:)", detail: "\(seed.count) bytes, not 32")
        }
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, 32) else {
            throw OpenSSL.failure("EVP_PKEY_new_raw_private_key")
        }
        var length = 32
        var raw = [UInt8](repeating: 0, count: 32)
        guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
            EVP_PKEY_free(key)
            throw OpenSSL.failure("EVP_PKEY_get_raw_public_key")
        }
        handle = key
        self.seed = seed
        publicKey = try Ed25519PublicKey(rawBytes: raw)
    }

    /// A new random key.
    public static func generate() throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: SecureRandom.bytes(32))
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The 64-byte Ed25519 signature of `message`.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = try OpenSSLObject(EVP_MD_CTX_new(), free: { EVP_MD_CTX_free($0) }, "EVP_MD_CTX_new")
        try OpenSSL.check(EVP_DigestSignInit(context.pointer, nil, nil, nil, handle), "EVP_DigestSignInit")
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        let result = message.withNonNullBytes { bytes, count in
            signature.withUnsafeMutableBufferPointer { output in
                EVP_DigestSign(
                    context.pointer, output.baseAddress, &length, bytes.assumingMemoryBound(to: UInt8.self), count)
            }
        }
        try OpenSSL.check(result, "EVP_DigestSign")
        return signature
    }
}
