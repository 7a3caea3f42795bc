#if canImport(AVFAudio) && !os(macOS)
import AVFAudio
import Foundation
import SwitchboardKit

/// The relay media session's microphone and speaker on an iPhone: one `AVAudioEngine` with
/// voice processing (echo cancellation, for the speakerphone) on its input, a sink node that
/// takes the microphone's audio each render cycle (a few milliseconds, where an input tap
/// would deliver 100–400 ms at a time) and converts it to 48 kHz mono, and a source node that
/// asks the session for speaker samples at 48 kHz mono.
///
/// `RelayMediaSession` starts it only once CallKit has activated the audio session
/// (`provider(_:didActivate:)`, SPEC §4 rule 7) and stops it on deactivation. One instance
/// serves one call at a time.
///
/// ```swift
/// let media = RelayMediaSession(server: serverURL, transport: URLSessionRelayTransport(), audio: AudioEngineRelayIO())
/// ```
// @unchecked Sendable: the mutable fields (`source`, `sink`, `running`) and the engine are read
// and written only inside `start` and `stop`, both of which hold `lock` for their whole body;
// `format` is a `let`. The audio threads never touch them: they run only the node blocks, which
// capture the caller's @Sendable closures and immutable formats, not `self`.
public final class AudioEngineRelayIO: RelayAudioIO, @unchecked Sendable {
    private let engine = AVAudioEngine()
    private let lock = NSLock()
    private var source: AVAudioSourceNode?
    private var sink: AVAudioSinkNode?
    private var running = false
    /// 48 kHz, mono, Float: what the session speaks in.
    private let format = AVAudioFormat(
        commonFormat: .pcmFormatFloat32, sampleRate: 48_000, channels: 1, interleaved: false)!

    public init() {}

    public func start(
        captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]
    ) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !running else { return }
        let format = self.format
        let input = engine.inputNode
        try input.setVoiceProcessingEnabled(true)
        let inputFormat = input.outputFormat(forBus: 0)
        guard let converter = AVAudioConverter(from: inputFormat, to: format) else {
            throw RelayMediaError.notOpened("no converter from \(inputFormat)")
        }
        let sink = AVAudioSinkNode { _, frameCount, audioBufferList -> OSStatus in
            guard
                let buffer = AVAudioPCMBuffer(
                    pcmFormat: inputFormat, bufferListNoCopy: audioBufferList, deallocator: nil)
            else { return noErr }
            buffer.frameLength = frameCount
            let capacity = AVAudioFrameCount(Double(frameCount) * format.sampleRate / inputFormat.sampleRate) + 64
            guard let converted = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: capacity) else { return noErr }
            var supplied = false
            var error: NSError?
            _ = converter.convert(to: converted, error: &error) { _, status in
                if supplied {
                    status.pointee = .noDataNow
                    return nil
                }
                supplied = true
                status.pointee = .haveData
                return buffer
            }
            if error == nil, let channel = converted.floatChannelData?[0] {
                captured(Array(UnsafeBufferPointer(start: channel, count: Int(converted.frameLength))))
            }
            return noErr
        }
        let source = AVAudioSourceNode(format: format) { _, _, frameCount, audioBufferList -> OSStatus in
            let samples = render(Int(frameCount))
            for buffer in UnsafeMutableAudioBufferListPointer(audioBufferList) {
                guard let data = buffer.mData?.assumingMemoryBound(to: Float.self) else { continue }
                let count = min(Int(frameCount), Int(buffer.mDataByteSize) / MemoryLayout<Float>.size, samples.count)
                for index in 0..<count { data[index] = samples[index] }
            }
            return noErr
        }
        engine.attach(sink)
        engine.attach(source)
        engine.connect(input, to: sink, format: inputFormat)
        engine.connect(source, to: engine.mainMixerNode, format: format)
        self.sink = sink
        self.source = source
        do {
            try engine.start()
        } catch {
            detachNodes()
            throw error
        }
        running = true
    }

    private func detachNodes() {
        if let sink {
            engine.detach(sink)
            self.sink = nil
        }
        if let source {
            engine.detach(source)
            self.source = nil
        }
    }

    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard running else { return }
        running = false
        engine.stop()
        detachNodes()
    }
}
#endif
