internal import CCrypto

/// Owns one OpenSSL object that Swift imports as `OpaquePointer` (`BIO`, `EVP_MD_CTX`,
/// `EVP_PKEY_CTX`, `ECDSA_SIG`, a scratch `EVP_PKEY`…) and frees it in `deinit` with the
/// matching `…_free` function.
///
/// Not `Sendable`: these objects are created, used and dropped inside one call.
/// ```swift
/// let context = try OpenSSLObject(EVP_MD_CTX_new(), free: EVP_MD_CTX_free, "EVP_MD_CTX_new")
/// try OpenSSL.check(EVP_DigestSignInit(context.pointer, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
/// ```
final class OpenSSLObject {
    /// The object; valid for as long as this owner is alive.
    let pointer: OpaquePointer
    private let free: (OpaquePointer?) -> Void

    /// Takes ownership of `pointer`, or throws the OpenSSL error that made `operation` return `NULL`.
    init(
        _ pointer: OpaquePointer?, free: @escaping (OpaquePointer?) -> Void, _ operation: @autoclosure () -> String
    ) throws(CryptoError) {
        self.pointer = try OpenSSL.nonNull(pointer, operation())
        self.free = free
    }

    deinit {
        free(pointer)
    }
}

/// PEM text in and out of OpenSSL through memory `BIO`s.
enum PEM {
    /// PEM text longer than this is refused before OpenSSL sees it; real keys are a few hundred bytes.
    static let maximumLength = 64 << 10

    /// A memory `BIO` holding a copy of `text`, ready to be read by a `PEM_read_bio_…` function.
    ///
    /// Spaces, tabs and carriage returns around each line are removed first: OpenSSL accepts CRLF
    /// but not an indented `-----BEGIN` line, which a key pasted into a config file often has.
    static func source(_ text: String, operation: String) throws(CryptoError) -> OpenSSLObject {
        guard text.utf8.count <= maximumLength else {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "PEM text longer than \(maximumLength) bytes")
        }
        let bytes = trimmingLines(Array(text.utf8))
        let bio = try OpenSSLObject(BIO_new(BIO_s_mem()), free: { BIO_free($0) }, "BIO_new")
        if !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { BIO_write(bio.pointer, $0.baseAddress, Int32($0.count)) }
            guard written == Int32(bytes.count) else { throw OpenSSL.failure("BIO_write") }
        }
        return bio
    }

    /// The private key in PEM `text` (PKCS#8, or the algorithm's own form), any kind; a
    /// passphrase is never asked for, so an encrypted key fails. ``CryptoError/Code/malformedInput``
    /// when there is none.
    static func privateKey(_ text: String, operation: String) throws(CryptoError) -> OpenSSLObject {
        let source = try PEM.source(text, operation: operation)
        do {
            // The closure refuses every passphrase request, so an encrypted key fails instead of
            // OpenSSL's default callback prompting on the terminal.
            return try OpenSSLObject(
                PEM_read_bio_PrivateKey(source.pointer, nil, { _, _, _, _ in -1 }, nil), free: { EVP_PKEY_free($0) },
                "PEM_read_bio_PrivateKey")
        } catch {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "no PEM private key found: \(error.detail)")
        }
    }

    /// The SPKI public key in PEM `text`, any kind. ``CryptoError/Code/malformedInput`` when there is none.
    static func publicKey(_ text: String, operation: String) throws(CryptoError) -> OpenSSLObject {
        let source = try PEM.source(text, operation: operation)
        do {
            return try OpenSSLObject(
                PEM_read_bio_PUBKEY(source.pointer, nil, { _, _, _, _ in -1 }, nil), free: { EVP_PKEY_free($0) },
                "PEM_read_bio_PUBKEY")
        } catch {
            throw CryptoError(
                code: .malformedInput, operation: operation, detail: "no PEM public key found: \(error.detail)")
        }
    }

    /// `bytes` with spaces, tabs and carriage returns removed from both ends of every line.
    static func trimmingLines(_ bytes: [UInt8]) -> [UInt8] {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if index > 0 { output.append(UInt8(ascii: "\n")) }
            guard let first = line.firstIndex(where: { !blank.contains($0) }),
                let last = line.lastIndex(where: { !blank.contains($0) })
            else { continue }
            output.append(contentsOf: line[first...last])
        }
        return output
    }

    /// Runs `write` against an empty memory `BIO` and returns what it wrote as text.
    static func written(
        _ operation: String, by write: (OpaquePointer) -> Int32
    ) throws(CryptoError) -> String {
        let bio = try OpenSSLObject(BIO_new(BIO_s_mem()), free: { BIO_free($0) }, "BIO_new")
        try OpenSSL.check(write(bio.pointer), operation)
        let pending = BIO_ctrl_pending(bio.pointer)
        guard pending <= maximumLength else { throw OpenSSL.failure("BIO_ctrl_pending") }
        var output = [UInt8](repeating: 0, count: pending)
        let read = output.withUnsafeMutableBytes { BIO_read(bio.pointer, $0.baseAddress, Int32($0.count)) }
        guard read == Int32(pending) else { throw OpenSSL.failure("BIO_read") }
        return String(decoding: output, as: UTF8.self)
    }
}
