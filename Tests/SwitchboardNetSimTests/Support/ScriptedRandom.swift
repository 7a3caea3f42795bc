/// A random number generator that plays back given values of `nextUnit()`, in order, then
/// repeats the last one.
struct ScriptedRandom: RandomNumberGenerator {
    private var units: [Double]
    private(set) var draws = 0

    init(_ units: [Double]) {
        self.units = units
    }

    mutating func next() -> UInt64 {
        let unit = units.isEmpty ? 0.5 : units[min(draws, units.count - 1)]
        draws += 1
        return UInt64(unit * 0x1p53) << 11
    }
}
