#if canImport(CallKit)
import CallKit
import PushKit
import AVFAudio
#else
import AppleFrameworkStubs
#endif
import Foundation

#if !os(macOS)  // CXProvider, VoIP pushes and AVAudioSession do not exist on macOS.

/// How the app's calls appear in the system call UI (CallKit's `CXProviderConfiguration`).
///
/// The name shown is the app's display name (`CFBundleDisplayName`): CallKit has ignored a
/// provider's own name since iOS 14, so there is no setting for it.
///
/// ```swift
/// var configuration = CallKitConfiguration()
/// configuration.ringtoneSound = "ring.caf"
/// configuration.iconTemplateImageData = UIImage(named: "CallIcon")?.pngData()
/// ```
public struct CallKitConfiguration: Sendable, Equatable {
    /// Whether calls may have video.
    public var supportsVideo: Bool
    /// Handle types the system may offer (Recents, Siri); Switchboard reports `.generic` ids.
    public var supportedHandleTypes: Set<CXHandle.HandleType>
    /// A sound file in the app bundle to ring with; `nil` plays the system ringtone.
    public var ringtoneSound: String?
    /// A 40×40 pt template PNG shown in the call UI.
    public var iconTemplateImageData: Data?
    /// Calls that may exist side by side (one active, the others held). Keep the default, 2:
    /// 1 makes CallKit refuse a call after rapid call/hang-up cycles (transaction error 7).
    public var maximumCallGroups: Int
    /// Calls per group; Switchboard never merges calls, so 1.
    public var maximumCallsPerCallGroup: Int
    /// Whether ended calls appear in the Phone app's Recents.
    public var includesCallsInRecents: Bool
    /// Whether calls can be put on hold (the system then offers "Hold & Accept" for a second
    /// call and sends `setHeld` actions).
    public var supportsHolding: Bool

    public init(
        supportsVideo: Bool = true,
        supportedHandleTypes: Set<CXHandle.HandleType> = [.generic],
        ringtoneSound: String? = nil,
        iconTemplateImageData: Data? = nil,
        maximumCallGroups: Int = 2,
        maximumCallsPerCallGroup: Int = 1,
        includesCallsInRecents: Bool = true,
        supportsHolding: Bool = true
    ) {
        self.supportsVideo = supportsVideo
        self.supportedHandleTypes = supportedHandleTypes
        self.ringtoneSound = ringtoneSound
        self.iconTemplateImageData = iconTemplateImageData
        self.maximumCallGroups = maximumCallGroups
        self.maximumCallsPerCallGroup = maximumCallsPerCallGroup
        self.includesCallsInRecents = includesCallsInRecents
        self.supportsHolding = supportsHolding
    }

    /// The CallKit configuration with these settings.
    func providerConfiguration() -> CXProviderConfiguration {
        let configuration = CXProviderConfiguration()
        configuration.supportsVideo = supportsVideo
        configuration.supportedHandleTypes = supportedHandleTypes
        configuration.ringtoneSound = ringtoneSound
        configuration.iconTemplateImageData = iconTemplateImageData
        configuration.maximumCallGroups = maximumCallGroups
        configuration.maximumCallsPerCallGroup = maximumCallsPerCallGroup
        configuration.includesCallsInRecents = includesCallsInRecents
        return configuration
    }
}

#endif
