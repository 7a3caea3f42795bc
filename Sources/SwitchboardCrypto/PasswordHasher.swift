internal import CCrypto

/// Hashes and verifies passwords with scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`.
///
/// Hashes are self-describing strings, `$scrypt$ln=15,r=8,p=1$<salt>$<key>` (base64url, no
/// padding, a fresh 16-byte salt and a 32-byte key), so the cost can be raised later and old
/// hashes still verify with the parameters they were made with:
/// ```swift
/// let hasher = PasswordHasher()
/// let stored = try await hasher.hash("correct horse")                 // off the cooperative pool
/// if try await hasher.verify("correct horse", against: stored) {
///     if hasher.needsRehash(stored) { newStored = try await hasher.hash("correct horse") }
/// }
/// ```
/// The password's bytes are its UTF-8 encoding as given, without Unicode normalisation.
/// The synchronous methods block the calling thread for the whole computation (tens of
/// milliseconds at ``Cost/standard``); from async code use the `async` variants.
public struct PasswordHasher: Sendable {
    /// The scrypt cost parameters: `n` (CPU/memory cost, a power of two), `r` (block size) and
    /// `p` (parallelism). Memory use is about `128 · r · n` bytes.
    public struct Cost: Sendable, Equatable {
        /// The CPU/memory cost; a power of two, at least 2.
        public var n: UInt64
        /// The block size.
        public var r: UInt64
        /// The parallelisation factor.
        public var p: UInt64

        /// Creates a cost; it is checked against ``PasswordHasher``'s limits when used.
        public init(n: UInt64, r: UInt64, p: UInt64) {
            self.n = n
            self.r = r
            self.p = p
        }

        /// The production cost, N = 2^15, r = 8, p = 1: about 32 MiB of memory and tens of
        /// milliseconds of CPU per hash on a current server core.
        public static let standard = Cost(n: 1 << 15, r: 8, p: 1)

        /// A cheap cost (N = 2^10, about 1 MiB, around a millisecond) for this package's test
        /// suites only; not part of the module's public API.
        package static let fastForTests = Cost(n: 1 << 10, r: 8, p: 1)
    }

    /// The cost new hashes are made with.
    public let cost: Cost
    /// The threads the `async` methods run on (and wait for, within a bound).
    public let workers: ScryptWorkers

    /// Creates a hasher that makes new hashes with `cost`, running its `async` work on
    /// `workers`.
    ///
    /// An out-of-limits cost is reported by `hash(_:)` as a ``CryptoError``.
    public init(cost: Cost = .standard, workers: ScryptWorkers = .shared) {
        self.cost = cost
        self.workers = workers
    }

    /// Salt bytes generated per hash.
    static let saltLength = 16
    /// Derived key bytes stored per hash.
    static let keyLength = 32

    /// Hashes `password` with a fresh random salt and returns the self-describing hash string.
    ///
    /// Blocks the calling thread; throws if ``cost`` is outside the limits described at
    /// `verify(_:against:)`.
    public func hash(_ password: String) throws -> String {
        let salt = SecureRandom.bytes(Self.saltLength)
        let key = try Self.scrypt(password: Array(password.utf8), salt: salt, cost: cost, length: Self.keyLength)
        return StoredPasswordHash(cost: cost, salt: salt, key: key).encoded
    }

    /// Whether `password` matches `stored`, recomputed with the parameters recorded in `stored`
    /// (not this hasher's ``cost``) and compared in constant time.
    ///
    /// Returns `false` for a wrong password, including a well-formed hash whose key was altered.
    /// Throws ``CryptoError`` with ``CryptoError/Code/malformedInput`` when `stored` is not a
    /// `$scrypt$ln=…,r=…,p=…$salt$key` string with valid base64url, and with
    /// ``CryptoError/Code/unsupportedParameters`` when its parameters exceed the limits:
    /// `ln` ≤ 20, `r · p` ≤ 1024, `n · r · p` ≤ 2^24 and at most 256 MiB of memory.
    /// Blocks the calling thread.
    public func verify(_ password: String, against stored: String) throws -> Bool {
        let parsed = try StoredPasswordHash(parsing: stored)
        let key = try Self.scrypt(
            password: Array(password.utf8), salt: parsed.salt, cost: parsed.cost, length: parsed.key.count)
        return ConstantTime.equals(key, parsed.key)
    }

    /// Whether `stored` should be replaced by a new hash: it was made with another cost or
    /// another salt or key length than this hasher uses, or it cannot be parsed at all.
    ///
    /// Call it after a successful `verify(_:against:)`, while the plaintext is at hand.
    public func needsRehash(_ stored: String) -> Bool {
        guard let parsed = try? StoredPasswordHash(parsing: stored) else { return true }
        return parsed.cost != cost || parsed.salt.count != Self.saltLength || parsed.key.count != Self.keyLength
    }

    /// Derives `length` bytes from `password` and `salt` with scrypt, after checking `cost`
    /// against the limits (so a stored hash can never make OpenSSL allocate more than 256 MiB).
    static func scrypt(password: [UInt8], salt: [UInt8], cost: Cost, length: Int) throws -> [UInt8] {
        try cost.checkLimits()
        guard (1...1024).contains(length) else {
            throw CryptoError(
                code: .unsupportedParameters, operation: "scrypt", detail: "key length \(length) is not in 1...1024")
        }
        var key = [UInt8](repeating: 0, count: length)
        let result = password.withNonNullBytes { passwordBytes, passwordCount in
            salt.withNonNullBytes { saltBytes, saltCount in
                key.withUnsafeMutableBufferPointer { output in
                    EVP_PBE_scrypt(
                        passwordBytes.assumingMemoryBound(to: CChar.self), passwordCount,
                        saltBytes.assumingMemoryBound(to: UInt8.self), saltCount,
                        cost.n, cost.r, cost.p, Cost.maximumMemory,
                        output.baseAddress, output.count)
                }
            }
        }
        try OpenSSL.check(result, "EVP_PBE_scrypt")
        return key
    }
}

extension PasswordHasher.Cost {
    /// The most memory one scrypt computation may use; also passed to OpenSSL as `maxmem`.
    static let maximumMemory: UInt64 = 256 << 20
    /// The largest accepted `log2(n)`.
    static let maximumLogN = 20
    /// The largest accepted `r · p`.
    static let maximumBlockParallelism: UInt64 = 1 << 10
    /// The largest accepted `n · r · p`, 64 times ``standard``.
    static let maximumWork: UInt64 = 1 << 24

    /// `log2(n)`, or `nil` when `n` is not a power of two.
    var logN: Int? {
        n != 0 && n & (n - 1) == 0 ? n.trailingZeroBitCount : nil
    }

    /// The bytes OpenSSL allocates: `128 · r · (n + 2)` for V plus `128 · r · p` for B.
    /// Only meaningful after the individual limits have been checked (so nothing overflows).
    var memory: UInt64 {
        128 * r * (n + 2) + 128 * r * p
    }

    /// Throws ``CryptoError/Code/unsupportedParameters`` unless this cost is within the limits.
    func checkLimits() throws(CryptoError) {
        func refuse(_ detail: String) -> CryptoError {
            CryptoError(code: .unsupportedParameters, operation: "scrypt", detail: detail)
        }
        guard let logN, logN >= 1 else { throw refuse("n = \(n) is not a power of two ≥ 2") }
        guard logN <= Self.maximumLogN else { throw refuse("ln = \(logN) exceeds \(Self.maximumLogN)") }
        guard r >= 1, p >= 1 else { throw refuse("r and p must be at least 1") }
        let (blockParallelism, overflow) = r.multipliedReportingOverflow(by: p)
        guard !overflow, blockParallelism <= Self.maximumBlockParallelism else {
            throw refuse("r · p exceeds \(Self.maximumBlockParallelism)")
        }
        guard n * blockParallelism <= Self.maximumWork else { throw refuse("n · r · p exceeds 2^24") }
        guard memory <= Self.maximumMemory else { throw refuse("needs \(memory >> 20) MiB, more than 256 MiB") }
    }
}
