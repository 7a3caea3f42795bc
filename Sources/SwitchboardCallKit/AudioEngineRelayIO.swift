#if canImport(AVFAudio) && !os(macOS)
import AVFAudio
import Foundation
import SwitchboardKit

/// The relay media session's microphone and speaker on an iPhone: one `AVAudioEngine`, its
/// input tapped and converted to 48 kHz mono, and a source node that asks the session for
/// speaker samples at 48 kHz mono.
///
/// `RelayMediaSession` starts it only once CallKit has activated the audio session
/// (`provider(_:didActivate:)`, SPEC §4 rule 7) and stops it on deactivation; the engine is
/// made when the session is, so nothing has to be built at the moment audio may start.
///
/// ```swift
/// let media = RelayMediaSession(server: serverURL, transport: URLSessionRelayTransport(), audio: AudioEngineRelayIO())
/// ```
public final class AudioEngineRelayIO: RelayAudioIO, @unchecked Sendable {
    // @unchecked Sendable: the engine and the nodes are touched in start and stop, under `lock`;
    // the audio threads only call the closures they were given.
    private let engine = AVAudioEngine()
    private let lock = NSLock()
    private var source: AVAudioSourceNode?
    private var running = false
    /// 48 kHz, mono, Float: what the session speaks in.
    private let format = AVAudioFormat(commonFormat: .pcmFormatFloat32, sampleRate: 48_000, channels: 1, interleaved: false)!

    public init() {}

    public func start(captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !running else { return }
        let format = self.format
        let input = engine.inputNode
        let inputFormat = input.outputFormat(forBus: 0)
        guard let converter = AVAudioConverter(from: inputFormat, to: format) else { throw RelayMediaError.notOpened("no converter from \(inputFormat)") }
        // 20 ms of the microphone's own rate per tap (the engine may deliver other sizes).
        let tapSize = AVAudioFrameCount(max(256, inputFormat.sampleRate / 50))
        input.installTap(onBus: 0, bufferSize: tapSize, format: inputFormat) { buffer, _ in
            let capacity = AVAudioFrameCount(Double(buffer.frameLength) * format.sampleRate / inputFormat.sampleRate) + 64
            guard let converted = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: capacity) else { return }
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
            guard error == nil, let channel = converted.floatChannelData?[0] else { return }
            captured(Array(UnsafeBufferPointer(start: channel, count: Int(converted.frameLength))))
        }
        let node = AVAudioSourceNode(format: format) { _, _, frameCount, audioBufferList -> OSStatus in
            let samples = render(Int(frameCount))
            for buffer in UnsafeMutableAudioBufferListPointer(audioBufferList) {
                guard let data = buffer.mData?.assumingMemoryBound(to: Float.self) else { continue }
                let count = min(Int(frameCount), Int(buffer.mDataByteSize) / MemoryLayout<Float>.size, samples.count)
                for index in 0..<count { data[index] = samples[index] }
            }
            return noErr
        }
        engine.attach(node)
        engine.connect(node, to: engine.mainMixerNode, format: format)
        source = node
        do {
            try engine.start()
        } catch {
            input.removeTap(onBus: 0)
            engine.detach(node)
            source = nil
            throw error
        }
        running = true
    }

    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard running else { return }
        running = false
        engine.inputNode.removeTap(onBus: 0)
        engine.stop()
        if let source {
            engine.detach(source)
            self.source = nil
        }
    }
}
#endif
