import SwitchboardKit

/// A resident size the test sets, for `MemoryPressureMonitor` off the phone.
///
/// ```swift
/// let footprint = SimulatedMemoryFootprint(megabytes: 90)
/// let memory = MemoryPressureMonitor(sampler: footprint)
/// footprint.megabytes = 260
/// memory.sample()   // fatal
/// ```
public final class SimulatedMemoryFootprint: MemoryFootprintSampling {
    private let value: LockedState<Double?>

    public init(megabytes: Double? = 0) { value = LockedState(megabytes) }

    /// The size reported (MB of 2^20 bytes); nil: unreadable.
    public var megabytes: Double? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }

    public func residentBytes() -> UInt64? {
        megabytes.map { UInt64(max(0, $0) * MemoryPressurePolicy.bytesPerMegabyte) }
    }
}
