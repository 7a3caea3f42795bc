internal import CCrypto

/// Cryptographically secure random bytes, tokens and UUIDs from OpenSSL's `RAND_bytes`.
///
/// ```swift
/// let sessionToken = SecureRandom.token()       // 43 base64url characters, 256 bits
/// let callID = SecureRandom.uuid()              // "3f2b8c1e-…-4…"
/// ```
public enum SecureRandom {
    /// Returns `count` random bytes.
    ///
    /// Traps only if OpenSSL's random generator fails, which means the system has no usable
    /// entropy source; a negative `count` is a programmer error and traps too.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count \(count)")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initializedCount in
            var offset = 0
            while offset < count {
                let chunk = Swift.min(count - offset, Int(Int32.max))
                do {
                    try OpenSSL.check(RAND_bytes(buffer.baseAddress! + offset, Int32(chunk)), "RAND_bytes")
                } catch {
                    preconditionFailure("OpenSSL's random generator is broken: \(error)")
                }
                offset += chunk
            }
            initializedCount = count
        }
    }

    /// Returns `byteCount` random bytes as base64url without padding (32 bytes → 43 characters).
    ///
    /// Suitable for session tokens, invite codes and other bearer secrets.
    public static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }

    /// Returns a random (version 4, RFC 4122 variant) UUID in lowercase, such as
    /// `"0f8fad5b-d9cb-469f-a165-70867728950e"`.
    public static func uuid() -> String {
        var raw = bytes(16)
        raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  // variant 10xx
        let hex = Array(Hex.encode(raw).utf8)
        var output: [UInt8] = []
        output.reserveCapacity(36)
        for (index, digit) in hex.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { output.append(UInt8(ascii: "-")) }
            output.append(digit)
        }
        return String(decoding: output, as: UTF8.self)
    }
}
