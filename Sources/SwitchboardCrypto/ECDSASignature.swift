internal import CCrypto

/// Converts P-256 ECDSA signatures between JOSE's fixed 64-byte `r || s` (RFC 7518 §3.4) and the
/// DER `ECDSA-Sig-Value` (SEQUENCE of two INTEGERs) that OpenSSL signs and verifies.
///
/// The ASN.1 work is OpenSSL's own (`d2i_ECDSA_SIG`, `i2d_ECDSA_SIG`), so no DER is parsed here.
enum ECDSASignature {
    /// Bytes in each of `r` and `s` for P-256.
    static let scalarLength = 32
    /// The length of a raw JOSE signature.
    static let rawLength = 2 * scalarLength

    /// The raw `r || s` form of a DER signature, each half left-padded with zeros to 32 bytes.
    static func raw(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let signature = try der.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor = buffer.baseAddress
            return try OpenSSLObject(
                d2i_ECDSA_SIG(nil, &cursor, buffer.count), free: { ECDSA_SIG_free($0) }, "d2i_ECDSA_SIG")
        }
        var output = [UInt8](repeating: 0, count: rawLength)
        let written = output.withUnsafeMutableBufferPointer { buffer in
            (
                BN_bn2binpad(ECDSA_SIG_get0_r(signature.pointer), buffer.baseAddress, Int32(scalarLength)),
                BN_bn2binpad(
                    ECDSA_SIG_get0_s(signature.pointer), buffer.baseAddress! + scalarLength, Int32(scalarLength))
            )
        }
        guard written == (Int32(scalarLength), Int32(scalarLength)) else { throw OpenSSL.failure("BN_bn2binpad") }
        return output
    }

    /// The DER form of a raw `r || s` signature, or `nil` unless `raw` is exactly 64 bytes.
    ///
    /// Values outside `1..<n` still encode; OpenSSL's verification rejects them.
    static func der(fromRaw raw: [UInt8]) throws(CryptoError) -> [UInt8]? {
        guard raw.count == rawLength else { return nil }
        let signature = try OpenSSLObject(ECDSA_SIG_new(), free: { ECDSA_SIG_free($0) }, "ECDSA_SIG_new")
        try raw.withUnsafeBufferPointer { buffer throws(CryptoError) in
            let base = buffer.baseAddress!
            let r = try OpenSSL.nonNull(BN_bin2bn(base, Int32(scalarLength), nil), "BN_bin2bn")
            guard let s = BN_bin2bn(base + scalarLength, Int32(scalarLength), nil) else {
                BN_free(r)
                throw OpenSSL.failure("BN_bin2bn")
            }
            // On success the signature owns r and s; on failure they are still ours to free.
            guard ECDSA_SIG_set0(signature.pointer, r, s) == 1 else {
                BN_free(r)
                BN_free(s)
                throw OpenSSL.failure("ECDSA_SIG_set0")
            }
        }
        let length = i2d_ECDSA_SIG(signature.pointer, nil)
        guard length > 0 else { throw OpenSSL.failure("i2d_ECDSA_SIG") }
        var output = [UInt8](repeating: 0, count: Int(length))
        let written = output.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature.pointer, &cursor)
        }
        guard written == length else { throw OpenSSL.failure("i2d_ECDSA_SIG") }
        return output
    }
}
