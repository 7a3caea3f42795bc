import Foundation

/// The app's audio session. The stub records `setCategory` and `setActive` calls so tests can
/// check that nothing but CallKit activates the session.
open class AVAudioSession: NSObject {
    /// A string-backed category, as Apple imports it.
    public struct Category: Hashable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        /// `AVAudioSessionCategoryPlayAndRecord`.
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
    }

    /// A string-backed mode, as Apple imports it.
    public struct Mode: Hashable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        /// `AVAudioSessionModeVoiceChat`.
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
    }

    /// Raw values are AVFAudio's `AVAudioSessionCategoryOptions`.
    public struct CategoryOptions: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        /// Deprecated in the iOS 26 SDK in favour of `allowBluetoothHFP` (same value).
        @available(*, deprecated, renamed: "allowBluetoothHFP")
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        /// Bluetooth hands-free devices as input and output routes (iOS 26 SDK name).
        public static let allowBluetoothHFP = CategoryOptions(rawValue: 0x4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
        public static let allowAirPlay = CategoryOptions(rawValue: 0x40)
    }

    /// Raw values are AVFAudio's `AVAudioSessionSetActiveOptions`.
    public struct SetActiveOptions: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 0x1)
    }

    /// A `setCategory(_:mode:options:)` call (stub only).
    public struct _StubCategoryCall: Sendable, Hashable {
        public let category: Category
        public let mode: Mode
        public let options: CategoryOptions

        public init(category: Category, mode: Mode, options: CategoryOptions) {
            self.category = category
            self.mode = mode
            self.options = options
        }
    }

    /// A `setActive` call (stub only).
    public struct _StubActiveCall: Sendable, Hashable {
        public let active: Bool
        public let options: SetActiveOptions

        public init(active: Bool, options: SetActiveOptions) {
            self.active = active
            self.options = options
        }
    }

    private struct Records {
        var categoryCalls: [_StubCategoryCall] = []
        var activeCalls: [_StubActiveCall] = []
        var categoryError: (any Error)?
    }

    private let records = StubRecords(Records())

    // The one process-wide instance, as in AVFAudio. nonisolated(unsafe): the stored reference
    // is never reassigned and the instance keeps its mutable state under a lock.
    nonisolated(unsafe) private static let shared = AVAudioSession()

    public override init() { super.init() }

    open class func sharedInstance() -> AVAudioSession { shared }

    open func setCategory(
        _ category: AVAudioSession.Category, mode: AVAudioSession.Mode, options: AVAudioSession.CategoryOptions = []
    ) throws {
        try records.withLock {
            if let error = $0.categoryError { throw error }
            $0.categoryCalls.append(_StubCategoryCall(category: category, mode: mode, options: options))
        }
    }

    open func setActive(_ active: Bool, options: AVAudioSession.SetActiveOptions = []) throws {
        records.withLock { $0.activeCalls.append(_StubActiveCall(active: active, options: options)) }
    }

    open func setActive(_ active: Bool) throws {
        try setActive(active, options: [])
    }

    // MARK: Stub only

    /// Every successful `setCategory(_:mode:options:)`, in order (stub only).
    public var _stubCategoryCalls: [_StubCategoryCall] { records.withLock { $0.categoryCalls } }
    /// Every `setActive` call, in order (stub only). An app under CallKit should have none.
    public var _stubActiveCalls: [_StubActiveCall] { records.withLock { $0.activeCalls } }
    /// Makes `setCategory` throw `error` until set back to `nil` (stub only).
    public func _stubFailSetCategory(with error: (any Error)?) { records.withLock { $0.categoryError = error } }
}
