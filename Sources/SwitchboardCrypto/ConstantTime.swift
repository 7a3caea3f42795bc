internal import CCrypto

/// Comparisons whose running time does not depend on where two secrets differ.
///
/// Use it for anything an attacker could probe byte by byte (MACs, password hashes, tokens):
/// ```swift
/// guard ConstantTime.equals(HMAC.sha256(key: key, message: body), presentedMAC) else { return .unauthorized }
/// ```
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, compared with OpenSSL's `CRYPTO_memcmp`.
    ///
    /// Arrays of different lengths are unequal at once: the length is not treated as secret.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withNonNullBytes { left, count in
            b.withNonNullBytes { right, _ in CRYPTO_memcmp(left, right, count) == 0 }
        }
    }
}
