internal import CCrypto

/// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP interface: a 32-byte key, a 96-bit
/// nonce, additional authenticated data, a 128-bit tag. What encrypts a device's VoIP payloads
/// (SPEC §3) and the payload keys the server stores.
///
/// ```swift
/// let box = try AESGCM.seal(plaintext, key: key, authenticating: Array(keyID.utf8))
/// let back = try AESGCM.open(box, key: key, authenticating: Array(keyID.utf8))   // throws when tampered
/// ```
public enum AESGCM {
    public static let keyBytes = 32
    public static let nonceBytes = 12
    public static let tagBytes = 16

    /// A nonce, the ciphertext (as long as the plaintext) and the tag.
    public struct SealedBox: Sendable, Equatable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public let tag: [UInt8]

        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// nonce ‖ ciphertext ‖ tag, one byte string (how a box is stored).
        public var combined: [UInt8] { nonce + ciphertext + tag }

        /// Splits nonce ‖ ciphertext ‖ tag; nil when too short to hold a nonce and a tag.
        public init?(combined: [UInt8]) {
            guard combined.count >= AESGCM.nonceBytes + AESGCM.tagBytes else { return nil }
            nonce = Array(combined.prefix(AESGCM.nonceBytes))
            ciphertext = Array(combined.dropFirst(AESGCM.nonceBytes).dropLast(AESGCM.tagBytes))
            tag = Array(combined.suffix(AESGCM.tagBytes))
        }
    }

    /// Encrypts `plaintext` under `key` with a fresh random nonce (or `nonce`, for known-answer
    /// tests: never reuse one under the same key), authenticating `additionalData` too.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]? = nil, authenticating additionalData: [UInt8] = []
    ) throws(CryptoError) -> SealedBox {
        let operation = "AESGCM.seal"
        try check(key: key, operation)
        let nonce = nonce ?? SecureRandom.bytes(nonceBytes)
        guard nonce.count == nonceBytes else {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "a nonce of \(nonce.count) bytes, not 12")
        }
        guard plaintext.count < Int(Int32.max), additionalData.count < Int(Int32.max) else {
            throw CryptoError(code: .unsupportedParameters, operation: operation, detail: "input over 2 GiB")
        }
        let context = try OpenSSLObject(EVP_CIPHER_CTX_new(), free: { EVP_CIPHER_CTX_free($0) }, "EVP_CIPHER_CTX_new")
        defer { ERR_clear_error() }
        try OpenSSL.check(EVP_EncryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, key, nonce), "EVP_EncryptInit_ex")
        var length: Int32 = 0
        if !additionalData.isEmpty {
            try OpenSSL.check(
                EVP_EncryptUpdate(context.pointer, nil, &length, additionalData, Int32(additionalData.count)),
                "EVP_EncryptUpdate(aad)")
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        if !plaintext.isEmpty {
            try OpenSSL.check(
                EVP_EncryptUpdate(context.pointer, &ciphertext, &written, plaintext, Int32(plaintext.count)),
                "EVP_EncryptUpdate")
        }
        var final: Int32 = 0
        try ciphertext.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            try OpenSSL.check(
                EVP_EncryptFinal_ex(context.pointer, buffer.baseAddress! + Int(written), &final), "EVP_EncryptFinal_ex")
        }
        ciphertext.removeLast(ciphertext.count - Int(written + final))
        var tag = [UInt8](repeating: 0, count: tagBytes)
        try OpenSSL.check(
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagBytes), &tag), "EVP_CTRL_GCM_GET_TAG")
        return SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// Decrypts `box` under `key`; throws ``CryptoError`` (`malformed_input`) when the tag does
    /// not match: a wrong key, other additional data, or a changed nonce, ciphertext or tag.
    public static func open(
        _ box: SealedBox, key: [UInt8], authenticating additionalData: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        let operation = "AESGCM.open"
        try check(key: key, operation)
        guard box.nonce.count == nonceBytes, box.tag.count == tagBytes else {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "a nonce of 12 bytes and a tag of 16 are needed")
        }
        guard box.ciphertext.count < Int(Int32.max), additionalData.count < Int(Int32.max) else {
            throw CryptoError(code: .unsupportedParameters, operation: operation, detail: "input over 2 GiB")
        }
        let context = try OpenSSLObject(EVP_CIPHER_CTX_new(), free: { EVP_CIPHER_CTX_free($0) }, "EVP_CIPHER_CTX_new")
        defer { ERR_clear_error() }
        try OpenSSL.check(
            EVP_DecryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, key, box.nonce), "EVP_DecryptInit_ex")
        var length: Int32 = 0
        if !additionalData.isEmpty {
            try OpenSSL.check(
                EVP_DecryptUpdate(context.pointer, nil, &length, additionalData, Int32(additionalData.count)),
                "EVP_DecryptUpdate(aad)")
        }
        var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count + 16)
        var written: Int32 = 0
        if !box.ciphertext.isEmpty {
            try OpenSSL.check(
                EVP_DecryptUpdate(context.pointer, &plaintext, &written, box.ciphertext, Int32(box.ciphertext.count)),
                "EVP_DecryptUpdate")
        }
        var tag = box.tag
        try OpenSSL.check(
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagBytes), &tag), "EVP_CTRL_GCM_SET_TAG")
        var final: Int32 = 0
        let verified = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context.pointer, buffer.baseAddress! + Int(written), &final)
        }
        guard verified == 1 else {
            OPENSSL_cleanse(&plaintext, plaintext.count)
            throw CryptoError(
                code: .malformedInput, operation: operation,
                detail: "the tag does not match (wrong key or tampered data)")
        }
        plaintext.removeLast(plaintext.count - Int(written + final))
        return plaintext
    }

    private static func check(key: [UInt8], _ operation: String) throws(CryptoError) {
        guard key.count == keyBytes else {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "a key of \(key.count) bytes, not 32")
        }
    }
}
