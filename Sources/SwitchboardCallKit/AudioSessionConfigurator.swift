#if canImport(CallKit)
import CallKit
import PushKit
import AVFAudio
#else
import AppleFrameworkStubs
#endif
import Foundation

#if !os(macOS)  // CXProvider, VoIP pushes and AVAudioSession do not exist on macOS.

/// Sets the audio session up for a call (`.playAndRecord`, `.voiceChat`) and never activates
/// it: CallKit activates the session and says so in `provider(_:didActivate:)`, the only moment
/// audio may start (SPEC §4 rule 7).
///
/// `CallKitCallSystem` calls it while it hands over a start or answer action, that is after the
/// call was reported, never before: a report the system refuses must not disturb the audio of
/// a call in progress.
public struct AudioSessionConfigurator: Sendable, Equatable {
    /// Offer Bluetooth hands-free devices (headsets, cars) as microphone and speaker.
    public var allowsBluetooth: Bool
    /// Route video calls to the loudspeaker instead of the earpiece.
    public var speakerForVideo: Bool

    public init(allowsBluetooth: Bool = true, speakerForVideo: Bool = true) {
        self.allowsBluetooth = allowsBluetooth
        self.speakerForVideo = speakerForVideo
    }

    /// The category options for an audio or a video call.
    public func options(video: Bool) -> AVAudioSession.CategoryOptions {
        var options: AVAudioSession.CategoryOptions = []
        if allowsBluetooth { options.insert(Self.bluetoothHandsFree) }
        if video && speakerForVideo { options.insert(.defaultToSpeaker) }
        return options
    }

    /// Sets category, mode and options; does not activate the session.
    public func configure(_ session: AVAudioSession, video: Bool) throws {
        try session.setCategory(.playAndRecord, mode: .voiceChat, options: options(video: video))
    }

    // The iOS 26 SDK renamed `.allowBluetooth` to `.allowBluetoothHFP` (same value) and
    // deprecated the old name; Xcode 26 ships Swift 6.2.
    #if compiler(>=6.2)
    private static let bluetoothHandsFree: AVAudioSession.CategoryOptions = .allowBluetoothHFP
    #else
    private static let bluetoothHandsFree: AVAudioSession.CategoryOptions = .allowBluetooth
    #endif
}

#endif
