import Foundation
import SwitchboardKit

/// A device's microphone and speaker for tests: the test speaks into it and listens to it,
/// a buffer at a time, on whatever clock it keeps. Nothing happens while it is not started,
/// just as a real audio engine stays silent until the call system activates the audio session.
///
/// ```swift
/// let io = SimulatedAudioIO()
/// let media = RelayMediaSession(server: url, transport: transport, audio: io)
/// io.speak(tone)                 // into the microphone (48 kHz)
/// let heard = io.listen(960)     // the next 20 ms from the speaker
/// ```
// @unchecked Sendable: its three `var`s (`captured`, `render`, `starts`) are read and written only
// inside `lock.withLock`; the callbacks are copied out under the lock and called outside it.
public final class SimulatedAudioIO: RelayAudioIO, @unchecked Sendable {
    private let lock = NSLock()
    private var captured: (@Sendable ([Float]) -> Void)?
    private var render: (@Sendable (Int) -> [Float])?
    private var starts = 0

    public init() {}

    public func start(
        captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]
    ) throws {
        lock.withLock {
            self.captured = captured
            self.render = render
            starts += 1
        }
    }

    public func stop() {
        lock.withLock {
            captured = nil
            render = nil
        }
    }

    /// Whether audio runs now.
    public var isRunning: Bool { lock.withLock { captured != nil } }

    /// How many times it was started.
    public var startCount: Int { lock.withLock { starts } }

    /// Microphone samples (48 kHz); ignored while stopped.
    public func speak(_ samples: [Float]) {
        let captured = lock.withLock { self.captured }
        captured?(samples)
    }

    /// The next `count` speaker samples (48 kHz); silence while stopped.
    public func listen(_ count: Int) -> [Float] {
        let render = lock.withLock { self.render }
        return render?(count) ?? [Float](repeating: 0, count: count)
    }
}
