/// The parsed form of a stored password hash, `$scrypt$ln=<log2 n>,r=<r>,p=<p>$<salt>$<key>`,
/// with salt and key in unpadded base64url.
///
/// Parsing is strict (exactly those three parameters, each once, decimal digits only; salt of 8 to
/// 64 bytes; key of 16 to 64 bytes) and never traps; limits on the cost itself are checked when
/// the hash is recomputed. Error details never repeat the stored string.
struct StoredPasswordHash: Equatable {
    var cost: PasswordHasher.Cost
    var salt: [UInt8]
    var key: [UInt8]

    static let identifier = "scrypt"
    static let saltLengths = 8...64
    static let keyLengths = 16...64

    init(cost: PasswordHasher.Cost, salt: [UInt8], key: [UInt8]) {
        self.cost = cost
        self.salt = salt
        self.key = key
    }

    /// Parses `text`, throwing ``CryptoError/Code/malformedInput`` when it is not a stored scrypt hash.
    init(parsing text: String) throws(CryptoError) {
        func malformed(_ detail: String) -> CryptoError {
            CryptoError(code: .malformedInput, operation: "PasswordHasher.verify", detail: "stored hash: \(detail)")
        }
        let fields = text.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0].isEmpty else { throw malformed("expected $scrypt$<params>$<salt>$<key>") }
        guard fields[1] == Self.identifier else { throw malformed("not an scrypt hash") }

        var parameters: [Substring: UInt64] = [:]
        for pair in fields[2].split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, ["ln", "r", "p"].contains(parts[0]) else {
                throw malformed("unexpected parameter")
            }
            guard parameters[parts[0]] == nil else { throw malformed("repeated parameter \(parts[0])") }
            guard let value = Self.decimal(parts[1]) else { throw malformed("parameter \(parts[0]) is not a number") }
            parameters[parts[0]] = value
        }
        guard let logN = parameters["ln"], let r = parameters["r"], let p = parameters["p"] else {
            throw malformed("ln, r and p are all required")
        }
        // Shifting by 64 or more is not meaningful; the real limit (20) is enforced before hashing.
        guard logN < 64 else {
            throw CryptoError(
                code: .unsupportedParameters, operation: "PasswordHasher.verify", detail: "ln = \(logN) is too large")
        }

        guard let salt = Base64URL.decode(String(fields[3])), Self.saltLengths.contains(salt.count) else {
            throw malformed("salt is not base64url of \(Self.saltLengths) bytes")
        }
        guard let key = Base64URL.decode(String(fields[4])), Self.keyLengths.contains(key.count) else {
            throw malformed("key is not base64url of \(Self.keyLengths) bytes")
        }
        self.init(cost: PasswordHasher.Cost(n: 1 << logN, r: r, p: p), salt: salt, key: key)
    }

    /// The string form; `cost.n` must be a power of two (``PasswordHasher/Cost/checkLimits()`` ensures it).
    var encoded: String {
        let logN = cost.logN ?? 0
        return
            "$\(Self.identifier)$ln=\(logN),r=\(cost.r),p=\(cost.p)$\(Base64URL.encode(salt))$\(Base64URL.encode(key))"
    }

    /// 1 to 10 ASCII digits (no sign, no spaces) as a number.
    private static func decimal(_ text: Substring) -> UInt64? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return UInt64(text)
    }
}
