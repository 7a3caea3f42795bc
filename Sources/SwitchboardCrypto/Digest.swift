internal import CCrypto

/// SHA-256 through OpenSSL's EVP digest interface.
///
/// ```swift
/// let digest = SHA256.hash(Array("abc".utf8))   // 32 bytes
/// let etag = SHA256.hex(body)                    // 64 lowercase hex digits
/// ```
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// Returns the 32-byte SHA-256 digest of `bytes`.
    ///
    /// Contiguous collections (`Array`, `ArraySlice`, `UnsafeBufferPointer`…) are hashed in place;
    /// others are streamed through OpenSSL in small chunks. Traps only if OpenSSL cannot compute
    /// SHA-256 at all, which means a broken libcrypto installation.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        do {
            let context = try DigestContext.sha256()
            let hashedInPlace: Void? = try bytes.withContiguousStorageIfAvailable { buffer in
                try context.update(UnsafeRawBufferPointer(buffer))
            }
            if hashedInPlace == nil {
                try stream(bytes, into: context)
            }
            return try context.finish()
        } catch {
            preconditionFailure("OpenSSL cannot compute SHA-256: \(error)")
        }
    }

    /// Returns the SHA-256 digest of `bytes` as 64 lowercase hexadecimal digits.
    ///
    /// This hashes its input; `SHA256.hex(Array("abc".utf8))` is `"ba7816bf…f20015ad"`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        Hex.encode(hash(bytes))
    }

    private static func stream(_ bytes: some Collection<UInt8>, into context: DigestContext) throws {
        let chunkSize = 4096
        var chunk: [UInt8] = []
        chunk.reserveCapacity(chunkSize)
        for byte in bytes {
            chunk.append(byte)
            if chunk.count == chunkSize {
                try chunk.withUnsafeBytes { try context.update($0) }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try chunk.withUnsafeBytes { try context.update($0) }
    }
}

/// MD5, for the one place a service insists on it: vivo push signs its auth request with
/// `md5(appId + appKey + timestamp + appSecret)`. Never for anything this product protects.
public enum MD5 {
    /// The digest of `bytes` as 32 lowercase hexadecimal digits.
    public static func hex(_ bytes: [UInt8]) -> String {
        do {
            let context = try DigestContext.md5()
            try bytes.withUnsafeBytes { try context.update($0) }
            return Hex.encode(try context.finish())
        } catch {
            preconditionFailure("OpenSSL cannot compute MD5: \(error)")
        }
    }
}

/// SHA-1, for the one place a protocol fixes it: the WebSocket handshake's
/// `Sec-WebSocket-Accept` (RFC 6455 §4.2.2). Not a security boundary; never for anything this
/// product protects.
public enum SHA1 {
    /// The 20-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        do {
            let context = try DigestContext.sha1()
            try bytes.withUnsafeBytes { try context.update($0) }
            return try context.finish()
        } catch {
            preconditionFailure("OpenSSL cannot compute SHA-1: \(error)")
        }
    }
}

/// Owns one OpenSSL `EVP_MD_CTX` and frees it in `deinit`.
///
/// Not `Sendable`: a context is created, fed and finished inside one call.
final class DigestContext {
    private let handle: OpaquePointer

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        EVP_MD_CTX_free(handle)
    }

    /// A context initialised for SHA-256.
    static func sha256() throws(CryptoError) -> DigestContext {
        try make(try OpenSSL.nonNull(EVP_sha256(), "EVP_sha256"))
    }

    /// A context initialised for SHA-1 (only for the WebSocket handshake).
    static func sha1() throws(CryptoError) -> DigestContext {
        try make(try OpenSSL.nonNull(EVP_sha1(), "EVP_sha1"))
    }

    /// A context initialised for MD5 (only where a service's signature demands it).
    static func md5() throws(CryptoError) -> DigestContext {
        try make(try OpenSSL.nonNull(EVP_md5(), "EVP_md5"))
    }

    private static func make(_ algorithm: OpaquePointer) throws(CryptoError) -> DigestContext {
        // Wrap the handle before anything else can fail, so deinit frees it on every path.
        let context = DigestContext(handle: try OpenSSL.nonNull(EVP_MD_CTX_new(), "EVP_MD_CTX_new"))
        try OpenSSL.check(EVP_DigestInit_ex(context.handle, algorithm, nil), "EVP_DigestInit_ex")
        return context
    }

    /// Feeds `bytes` into the digest.
    func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        try OpenSSL.check(EVP_DigestUpdate(handle, base, bytes.count), "EVP_DigestUpdate")
    }

    /// Finishes the digest and returns it; the context cannot be fed afterwards.
    func finish() throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        try OpenSSL.check(EVP_DigestFinal_ex(handle, &output, &length), "EVP_DigestFinal_ex")
        return Array(output.prefix(Int(length)))
    }
}

/// HMAC through OpenSSL's one-shot `HMAC()`.
///
/// ```swift
/// let mac = HMAC.sha256(key: secret, message: Array(payload.utf8))
/// guard ConstantTime.equals(mac, presented) else { return nil }
/// ```
public enum HMAC {
    /// Returns the 32-byte HMAC-SHA256 of `message` under `key` (RFC 2104, RFC 4231).
    ///
    /// Keys longer than the 64-byte block are hashed first, as the RFC specifies. Traps only if
    /// OpenSSL cannot compute HMAC-SHA256 at all (a broken libcrypto installation).
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition(key.count <= Int(Int32.max), "HMAC.sha256: key longer than 2 GiB")
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        do {
            let algorithm = try OpenSSL.nonNull(EVP_sha256(), "EVP_sha256")
            let result = key.withNonNullBytes { keyBytes, keyCount in
                message.withNonNullBytes { messageBytes, messageCount in
                    output.withUnsafeMutableBufferPointer { out in
                        // `HMAC` alone would name this module's enum; the C function lives in CCrypto.
                        CCrypto.HMAC(
                            algorithm, keyBytes, Int32(keyCount),
                            messageBytes.assumingMemoryBound(to: UInt8.self), messageCount,
                            out.baseAddress, &length)
                    }
                }
            }
            _ = try OpenSSL.nonNull(result, "HMAC")
        } catch {
            preconditionFailure("OpenSSL cannot compute HMAC-SHA256: \(error)")
        }
        return Array(output.prefix(Int(length)))
    }
}
