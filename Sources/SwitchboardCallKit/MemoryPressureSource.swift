#if canImport(Darwin)
@preconcurrency import Darwin
import Dispatch
import Foundation
import SwitchboardKit

/// The process's physical footprint (`task_info(TASK_VM_INFO).phys_footprint`): what iOS
/// judges the app's memory limit on, and what Xcode's memory gauge shows.
public struct PhysicalFootprintSampler: MemoryFootprintSampling {
    public init() {}

    public func residentBytes() -> UInt64? {
        var info = task_vm_info_data_t()
        // TASK_VM_INFO_COUNT is a macro Swift cannot import: the size in `integer_t`s.
        var count = mach_msg_type_number_t(MemoryLayout<task_vm_info_data_t>.size / MemoryLayout<integer_t>.size)
        let task = mach_task_self_
        let result = withUnsafeMutablePointer(to: &info) { pointer in
            pointer.withMemoryRebound(to: integer_t.self, capacity: Int(count)) {
                task_info(task, task_flavor_t(TASK_VM_INFO), $0, &count)
            }
        }
        guard result == KERN_SUCCESS else { return nil }
        return info.phys_footprint
    }
}

/// Asks a `MemoryPressureMonitor` to sample on the system's memory-pressure events
/// (`DispatchSource.makeMemoryPressureSource`, warning and critical) and every `interval`
/// seconds, so the footprint's level is known before the system acts on it.
///
/// ```swift
/// let memory = MemoryPressureMonitor(sampler: PhysicalFootprintSampler())
/// let source = MemoryPressureSource(monitor: memory)
/// source.start()   // at launch; stop() when done
/// ```
// @unchecked Sendable: `sources` is read and written only under `lock`; the dispatch sources
// themselves are thread-safe and their handlers run on `queue`.
public final class MemoryPressureSource: @unchecked Sendable {
    private let monitor: MemoryPressureMonitor
    private let interval: Double
    private let queue = DispatchQueue(label: "switchboard.memory-pressure")
    private let lock = NSLock()
    private var sources: [any DispatchSourceProtocol] = []

    /// - Parameter interval: seconds between samples besides the system's events.
    public init(monitor: MemoryPressureMonitor, interval: Double = 2) {
        self.monitor = monitor
        self.interval = max(0.5, interval)
    }

    /// Starts sampling (once; later calls do nothing until `stop()`).
    public func start() {
        lock.lock()
        defer { lock.unlock() }
        guard sources.isEmpty else { return }
        let monitor = self.monitor
        let pressure = DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical], queue: queue)
        pressure.setEventHandler { monitor.sample() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: interval)
        timer.setEventHandler { monitor.sample() }
        sources = [pressure, timer]
        pressure.resume()
        timer.resume()
    }

    /// Stops sampling.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        sources.forEach { $0.cancel() }
        sources = []
    }
}
#endif
