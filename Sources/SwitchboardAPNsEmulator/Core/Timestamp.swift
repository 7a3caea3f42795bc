import Glibc

/// Wall-clock time for what the emulator reports (JWT age, 410 timestamps, `receivedAt`),
/// injected so tests can pin it.
///
/// ```swift
/// var configuration = APNsEmulatorConfiguration()
/// configuration.clock = APNsEmulatorClock { 1_700_000_000_000 }   // a fixed instant
/// ```
public struct APNsEmulatorClock: Sendable {
    /// Milliseconds since the UNIX epoch.
    public let nowMilliseconds: @Sendable () -> Int64

    /// A clock that answers `nowMilliseconds()`.
    public init(nowMilliseconds: @escaping @Sendable () -> Int64) {
        self.nowMilliseconds = nowMilliseconds
    }

    /// The system's real-time clock.
    public static let system = APNsEmulatorClock {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
