import Foundation

/// Reads the process's resident size: on iOS its physical footprint (`task_info`'s
/// `phys_footprint`, the `SwitchboardCallKit` adapter); in tests a value the test sets.
public protocol MemoryFootprintSampling: Sendable {
    /// The resident size in bytes now; nil when it cannot be read.
    func residentBytes() -> UInt64?
}

/// Applies the ``MemoryPressurePolicy`` to samples and tells whoever listens when the level
/// changes: the app (to shed its caches), the ``CallCoordinator`` (each call's media session
/// sheds video; at `fatal` live calls end cleanly, reported as failed once).
///
/// Something must ask it to ``sample()``: on iOS the `MemoryPressureSource` adapter does, on the
/// system's memory-pressure events and every few seconds.
///
/// ```swift
/// let memory = MemoryPressureMonitor(sampler: PhysicalFootprintSampler())
/// memory.onChange { plan in if plan.caches >= .trimOptional { imageCache.removeAll() } }
/// let coordinator = CallCoordinator(..., memoryPressure: memory)
/// ```
public final class MemoryPressureMonitor: Sendable {
    private struct State {
        var policy = MemoryPressurePolicy()
        var handlers: [@Sendable (MemoryShedPlan) -> Void] = []
    }

    private let sampler: any MemoryFootprintSampling
    private let state = LockedState(State())

    public init(sampler: any MemoryFootprintSampling) {
        self.sampler = sampler
    }

    /// Runs `handler` with the new level's plan at every change (on the sampling thread; keep
    /// it short).
    public func onChange(_ handler: @escaping @Sendable (MemoryShedPlan) -> Void) {
        state.withLock { $0.handlers.append(handler) }
    }

    /// The current level.
    public var level: MemoryPressureLevel { state.withLock { $0.policy.level } }

    /// The current level's plan (what a media session that starts now should keep to).
    public var plan: MemoryShedPlan { MemoryShedPlan.plan(for: level) }

    /// Reads the sampler and, when the level changed, tells every listener. Returns the new
    /// plan when it changed.
    @discardableResult
    public func sample() -> MemoryShedPlan? {
        guard let bytes = sampler.residentBytes() else { return nil }
        let (plan, handlers) = state.withLock { state in (state.policy.sampled(residentBytes: bytes), state.handlers) }
        guard let plan else { return nil }
        handlers.forEach { $0(plan) }
        return plan
    }
}
