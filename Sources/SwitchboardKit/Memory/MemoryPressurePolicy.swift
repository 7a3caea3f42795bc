/// How close the app is to being killed for its memory (SPEC §4 rule 12), from its resident
/// size (on iOS the physical footprint, what the system's memory limit is judged on).
public enum MemoryPressureLevel: Int, Sendable, Equatable, Comparable, CaseIterable, CustomStringConvertible {
    /// Below 120 MB.
    case safe
    /// 120–180 MB.
    case warning
    /// 180–250 MB.
    case critical
    /// 250 MB or more: live calls end cleanly now, before the system kills the app mid-call.
    case fatal

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .safe: "safe"
        case .warning: "warning"
        case .critical: "critical"
        case .fatal: "fatal"
        }
    }
}

/// What to give up at a memory-pressure level: told to the app and to each call's media session.
public struct MemoryShedPlan: Sendable, Equatable {
    /// What to do with caches (images, decoded media, prefetched data).
    public enum Caches: Int, Sendable, Equatable, Comparable {
        /// Keep them.
        case keep
        /// Drop what is cheap to rebuild (prefetches, thumbnails not on screen).
        case trimOptional
        /// Drop every cache that can be rebuilt.
        case purgeAll

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// How much video the media session may send and decode.
    public enum Video: Sendable, Equatable {
        case unlimited
        /// At most this many lines (e.g. 720 for 1280×720) and bits per second.
        case capped(maxHeight: Int, maxBitrate: Int)
        /// No video at all (audio only).
        case off
    }

    public var level: MemoryPressureLevel
    public var caches: Caches
    public var video: Video
    /// Live calls end (as failed, reported once) rather than the process being killed.
    public var endsCalls: Bool

    public init(level: MemoryPressureLevel, caches: Caches, video: Video, endsCalls: Bool) {
        self.level = level
        self.caches = caches
        self.video = video
        self.endsCalls = endsCalls
    }

    /// The SDK's plan per level: safe sheds nothing; warning trims optional caches and caps
    /// video at 720p / 1.2 Mbit/s; critical purges caches and caps video at 360p / 400 kbit/s;
    /// fatal purges caches, turns video off and ends live calls.
    public static func plan(for level: MemoryPressureLevel) -> MemoryShedPlan {
        switch level {
        case .safe: MemoryShedPlan(level: level, caches: .keep, video: .unlimited, endsCalls: false)
        case .warning:
            MemoryShedPlan(
                level: level, caches: .trimOptional, video: .capped(maxHeight: 720, maxBitrate: 1_200_000),
                endsCalls: false)
        case .critical:
            MemoryShedPlan(
                level: level, caches: .purgeAll, video: .capped(maxHeight: 360, maxBitrate: 400_000), endsCalls: false)
        case .fatal: MemoryShedPlan(level: level, caches: .purgeAll, video: .off, endsCalls: true)
        }
    }
}

/// Maps resident-size samples to a ``MemoryPressureLevel`` with hysteresis, as a pure state
/// machine: each sample returns the new level's plan when the level changed, else nil.
///
/// Up at once: a sample at or above a threshold (120, 180, 250 MB; MB = 2^20 bytes) raises the
/// level to it, however many levels that skips. Down only with margin: the level falls only
/// once a sample is more than ``hysteresis`` (10 MB) below the current level's threshold, and
/// then to the level that sample plus the margin reaches — so a footprint wavering around a
/// threshold changes the level once, not with every sample.
///
/// ```swift
/// var policy = MemoryPressurePolicy()
/// policy.sampled(megabytes: 130)   // warning's plan
/// policy.sampled(megabytes: 115)   // nil: within 10 MB of 120, still warning
/// policy.sampled(megabytes: 109)   // safe's plan
/// ```
public struct MemoryPressurePolicy: Sendable, Equatable {
    public static let bytesPerMegabyte = 1_048_576.0
    /// Where warning, critical and fatal begin (MB).
    public static let warningThreshold = 120.0
    public static let criticalThreshold = 180.0
    public static let fatalThreshold = 250.0
    /// How far below a level's threshold the footprint must drop for the level to fall (MB).
    public static let hysteresis = 10.0

    /// The current level.
    public private(set) var level: MemoryPressureLevel = .safe
    /// The latest sample (MB).
    public private(set) var lastMegabytes: Double?

    public init() {}

    /// The level of `megabytes` without hysteresis.
    public static func level(forMegabytes megabytes: Double) -> MemoryPressureLevel {
        if megabytes >= fatalThreshold { return .fatal }
        if megabytes >= criticalThreshold { return .critical }
        if megabytes >= warningThreshold { return .warning }
        return .safe
    }

    /// A sample of the resident size in bytes.
    public mutating func sampled(residentBytes: UInt64) -> MemoryShedPlan? {
        sampled(megabytes: Double(residentBytes) / Self.bytesPerMegabyte)
    }

    /// A sample of the resident size in MB: the new level's plan when it changed.
    public mutating func sampled(megabytes: Double) -> MemoryShedPlan? {
        guard megabytes.isFinite, megabytes >= 0 else { return nil }
        lastMegabytes = megabytes
        let raw = Self.level(forMegabytes: megabytes)
        let next = raw >= level ? raw : min(level, Self.level(forMegabytes: megabytes + Self.hysteresis))
        guard next != level else { return nil }
        level = next
        return MemoryShedPlan.plan(for: next)
    }
}
