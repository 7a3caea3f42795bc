#if canImport(Network)
import Foundation
import Network
import SwitchboardKit

/// Reports the device's reachability from `NWPathMonitor` to a `ReconnectMonitor` (SPEC §4
/// rule 12): every path update says online when its status is `.satisfied`, so a change of
/// network while requests fail is a moment to try again at once.
///
/// ```swift
/// let reconnect = ReconnectMonitor()
/// let reachability = NetworkPathReachability(reporting: reconnect)
/// reachability.start()   // at launch; stop() when the session ends
/// ```
// @unchecked Sendable: `NWPathMonitor` is not declared Sendable in every SDK; the one stored
// here is used only in `start()` and `stop()`, each under `lock`, and its handler runs on `queue`.
public final class NetworkPathReachability: @unchecked Sendable {
    private let pathMonitor = NWPathMonitor()
    private let queue = DispatchQueue(label: "switchboard.reachability")
    private let lock = NSLock()
    private var started = false
    private let reconnect: ReconnectMonitor

    public init(reporting reconnect: ReconnectMonitor) {
        self.reconnect = reconnect
    }

    /// Starts reporting path updates (once; later calls do nothing).
    public func start() {
        lock.lock()
        defer { lock.unlock() }
        guard !started else { return }
        started = true
        let reconnect = self.reconnect
        pathMonitor.pathUpdateHandler = { path in reconnect.networkChanged(isOnline: path.status == .satisfied) }
        pathMonitor.start(queue: queue)
    }

    /// Stops for good (an `NWPathMonitor` cannot be started again).
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        pathMonitor.cancel()
    }
}
#endif
