/// A small, fast, deterministic random number generator (Steele, Lea and Flood's SplitMix64):
/// the same seed gives the same sequence on every platform and Swift version, which the
/// standard library's generators do not promise.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let unit = random.nextUnit()   // in 0..<1
/// var child = random.split()     // an independent stream, also reproducible
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable, Equatable {
    /// The generator's whole state.
    public private(set) var state: UInt64

    /// Creates a generator; any seed, zero included, is fine.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A generator for a separate stream, seeded from this one's next output.
    public mutating func split() -> SplitMix64 {
        SplitMix64(seed: next())
    }
}

extension RandomNumberGenerator {
    /// A uniform `Double` in `0..<1` from the top 53 bits of `next()`: a fixed mapping, unlike
    /// `Double.random(in:using:)`, whose way of drawing is not part of its contract.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}
