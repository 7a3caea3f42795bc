#if canImport(AVFAudio) && !os(macOS)
import AVFAudio
import Foundation
import SwitchboardKit

/// The relay media session's microphone and speaker on an iPhone: one `AVAudioEngine` with
/// voice processing (echo cancellation, for the speakerphone) on its input, a sink node that
/// takes the microphone's audio each render cycle, and a source node that plays 48 kHz mono.
///
/// Real-time safe: both node blocks only copy samples into or out of a lock-free ring
/// (``AudioRing``) — no lock, no allocation, no Objective-C or Swift runtime call that can
/// block. A pump thread of ``RealtimeRelayAudioIO`` moves the samples between the rings and the
/// session, converting the microphone's rate to 48 kHz with an `AVAudioConverter` there.
///
/// It keeps the call's audio through interruptions (a GSM call, Siri: the engine stops, and
/// starts again when the interruption ends), route changes that change the hardware's format
/// (Bluetooth connecting: `AVAudioEngineConfigurationChange` stops the engine, which is rebuilt
/// for the new format and started again) and a reset of the media services (a new engine).
///
/// `RelayMediaSession` starts it only once CallKit has activated the audio session
/// (`provider(_:didActivate:)`) and stops it on deactivation. One instance serves one call at
/// a time.
///
/// ```swift
/// let media = RelayMediaSession(server: serverURL, transport: URLSessionRelayTransport(), audio: AudioEngineRelayIO())
/// ```
// @unchecked Sendable: `observers` is a `let` written in `init` and read only in `deinit`;
// `io` is Sendable.
public final class AudioEngineRelayIO: RelayAudioIO, @unchecked Sendable {
    private let io: RealtimeRelayAudioIO
    private let observers: [any NSObjectProtocol]
    /// Where notifications are turned into rebuilds, off the thread that posted them.
    nonisolated(unsafe) private static let events = DispatchQueue(label: "switchboard.audio-engine-events")

    public init() {
        let graph = EngineGraph()
        let io = RealtimeRelayAudioIO(graph: graph, makeConverter: AudioEngineRelayIO.converter)
        self.io = io
        graph.onConfigurationChange = { Self.events.async { io.hardwareChanged() } }
        let center = NotificationCenter.default, session = AVAudioSession.sharedInstance()
        observers = [
            center.addObserver(forName: AVAudioSession.interruptionNotification, object: session, queue: nil) { note in
                let raw = note.userInfo?[AVAudioSessionInterruptionTypeKey] as? UInt
                let type = raw.flatMap(AVAudioSession.InterruptionType.init(rawValue:))
                Self.events.async {
                    switch type {
                    case .began?: io.interruptionBegan()
                    case .ended?: io.interruptionEnded()
                    default: break
                    }
                }
            },
            center.addObserver(
                forName: AVAudioSession.mediaServicesWereResetNotification, object: session, queue: nil
            ) { _ in
                Self.events.async { io.hardwareChanged() }
            },
        ]
    }

    deinit { observers.forEach(NotificationCenter.default.removeObserver) }

    public func start(
        captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]
    ) throws {
        try io.start(captured: captured, render: render)
    }

    public func stop() { io.stop() }

    /// The microphone's audio (mono, at `rate`) as 48 kHz, on the pump thread.
    @Sendable static func converter(_ rate: Double) -> (inout [Float]) -> Void {
        guard let from = AVAudioFormat(standardFormatWithSampleRate: rate, channels: 1),
            let to = AVAudioFormat(standardFormatWithSampleRate: 48_000, channels: 1),
            let converter = AVAudioConverter(from: from, to: to)
        else { return LinearRateConverter.to48k(rate) }
        return { samples in
            guard !samples.isEmpty,
                let input = AVAudioPCMBuffer(pcmFormat: from, frameCapacity: AVAudioFrameCount(samples.count)),
                let output = AVAudioPCMBuffer(
                    pcmFormat: to, frameCapacity: AVAudioFrameCount(Double(samples.count) * 48_000 / rate) + 64),
                let inputData = input.floatChannelData?[0]
            else {
                samples = []
                return
            }
            input.frameLength = AVAudioFrameCount(samples.count)
            samples.withUnsafeBufferPointer { inputData.update(from: $0.baseAddress!, count: $0.count) }
            var supplied = false
            var error: NSError?
            _ = converter.convert(to: output, error: &error) { _, status in
                if supplied {
                    status.pointee = .noDataNow
                    return nil
                }
                supplied = true
                status.pointee = .haveData
                return input
            }
            guard error == nil, let outputData = output.floatChannelData?[0] else {
                samples = []
                return
            }
            samples = Array(UnsafeBufferPointer(start: outputData, count: Int(output.frameLength)))
        }
    }
}

/// The engine and its two nodes. Every method runs under ``RealtimeRelayAudioIO``'s lock, so
/// they never overlap; the node blocks capture only the rings.
// @unchecked Sendable: `engine`, `sink`, `source`, `configurationObserver` and
// `onConfigurationChange` are read and written only by `build`, `start`, `stop` and `teardown`,
// which RealtimeRelayAudioIO calls under its lock, and by `AudioEngineRelayIO.init` before the
// graph is shared.
final class EngineGraph: RealtimeAudioGraph, @unchecked Sendable {
    private var engine = AVAudioEngine()
    private var sink: AVAudioSinkNode?
    private var source: AVAudioSourceNode?
    private var configurationObserver: (any NSObjectProtocol)?
    var onConfigurationChange: @Sendable () -> Void = {}
    /// 48 kHz, mono, Float: what the session speaks in.
    private let format = AVAudioFormat(standardFormatWithSampleRate: 48_000, channels: 1)!

    func build(microphone: AudioRing, speaker: AudioRing) throws -> Double {
        let input = engine.inputNode
        try input.setVoiceProcessingEnabled(true)
        let rate = input.outputFormat(forBus: 0).sampleRate
        guard rate > 0, let inputFormat = AVAudioFormat(standardFormatWithSampleRate: rate, channels: 1) else {
            throw RelayMediaError.notOpened("no microphone format (rate \(rate))")
        }
        // Channel 0 of a non-interleaved Float buffer: copied into the ring, nothing else.
        let sink = AVAudioSinkNode { _, frameCount, bufferList -> OSStatus in
            let buffers = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: bufferList))
            guard buffers.count > 0, let data = buffers[0].mData?.assumingMemoryBound(to: Float.self) else {
                return noErr
            }
            let count = min(Int(frameCount), Int(buffers[0].mDataByteSize) / MemoryLayout<Float>.size)
            microphone.write(data, count: count)
            return noErr
        }
        // The speaker ring into the first buffer (silence for what it lacks), copied to any other.
        let source = AVAudioSourceNode(format: format) { _, _, frameCount, bufferList -> OSStatus in
            let buffers = UnsafeMutableAudioBufferListPointer(bufferList)
            guard buffers.count > 0, let first = buffers[0].mData?.assumingMemoryBound(to: Float.self) else {
                return noErr
            }
            let count = min(Int(frameCount), Int(buffers[0].mDataByteSize) / MemoryLayout<Float>.size)
            let got = speaker.read(into: first, count: count)
            if got < count { (first + got).update(repeating: 0, count: count - got) }
            for index in 1..<max(buffers.count, 1) {
                buffers[index].mData?.assumingMemoryBound(to: Float.self).update(from: first, count: count)
            }
            return noErr
        }
        engine.attach(sink)
        engine.attach(source)
        engine.connect(input, to: sink, format: inputFormat)
        engine.connect(source, to: engine.mainMixerNode, format: format)
        self.sink = sink
        self.source = source
        let notify = onConfigurationChange
        configurationObserver = NotificationCenter.default.addObserver(
            forName: .AVAudioEngineConfigurationChange, object: engine, queue: nil
        ) { _ in notify() }
        engine.prepare()
        return rate
    }

    func start() throws { try engine.start() }

    func stop() { engine.stop() }

    /// Detaches the nodes and drops the engine: the next build takes a new one, made for the
    /// hardware (and media services) as they are then.
    func teardown() {
        if let configurationObserver { NotificationCenter.default.removeObserver(configurationObserver) }
        configurationObserver = nil
        if let sink { engine.detach(sink) }
        if let source { engine.detach(source) }
        sink = nil
        source = nil
        engine = AVAudioEngine()
    }
}
#endif
