import Foundation

/// The platform's audio engine, reduced to what real-time audio needs: its capture callback
/// only writes the microphone's samples (mono, at the rate `build` returns) into one
/// ``AudioRing``, and its render callback only reads 48 kHz mono speaker samples from another
/// (silence for what is missing). Nothing else runs on the audio threads.
public protocol RealtimeAudioGraph: AnyObject, Sendable {
    /// Makes the graph for the hardware as it is now; returns the microphone's sample rate.
    func build(microphone: AudioRing, speaker: AudioRing) throws -> Double
    func start() throws
    func stop()
    /// Takes the graph down (and, after the media services were reset, the engine with it),
    /// so the next `build` starts from the hardware as it is then.
    func teardown()
}

/// A ``RelayAudioIO`` whose audio callbacks touch only two lock-free rings (``AudioRing``): a
/// pump thread of its own moves samples between the rings and the session (which may take
/// locks and allocate), converting the microphone's rate to 48 kHz. It keeps the call's audio
/// through what a phone throws at it: an interruption (a GSM call, Siri) stops the graph until
/// it ends; a hardware change (Bluetooth connecting, a route with another sample rate, the media
/// services reset) rebuilds it for the new hardware and starts it again.
///
/// The speaker ring is kept about 20 ms ahead of the largest request the render callback made,
/// so playout adds that much delay; an empty ring plays silence and counts an underrun.
// @unchecked Sendable: `control`'s state is read and written only under its lock, which the pump
// holds for each pass and `start`/`stop`/the events hold while they change the graph, so the
// rings are reset only while neither the pump nor (the graph being stopped) an audio thread
// uses them. The rings are `let`s and thread-safe for one producer and one consumer each.
public final class RealtimeRelayAudioIO: RelayAudioIO, @unchecked Sendable {
    /// What the pump does each pass, and how long it sleeps between passes.
    public static let pumpPeriod: Duration = .milliseconds(5)
    /// How far (samples at 48 kHz) the speaker ring is kept ahead of the largest render request.
    public static let speakerLead = 960

    private struct Control {
        var captured: (@Sendable ([Float]) -> Void)?
        var render: (@Sendable (Int) -> [Float])?
        var convert: ((inout [Float]) -> Void)?
        var running = false
        var interrupted = false
        var pumping = false
        /// Bumped by each start: a pump serves only the start that launched it.
        var generation = 0
        var rebuilds = 0
        var captureRate = 48_000.0
    }

    let graph: any RealtimeAudioGraph
    private let makeConverter: @Sendable (Double) -> (inout [Float]) -> Void
    /// Microphone samples at the hardware's rate (graph → pump), speaker samples at 48 kHz
    /// (pump → graph).
    public let microphone = AudioRing(capacity: 16_384)
    public let speaker = AudioRing(capacity: 16_384)
    private let control = LockedState(Control())
    private let pumpDone = DispatchSemaphore(value: 0)

    /// `makeConverter` makes the microphone's converter to 48 kHz for a rate (the default
    /// interpolates linearly; AVAudioConverter on an iPhone).
    public init(
        graph: any RealtimeAudioGraph,
        makeConverter: @escaping @Sendable (Double) -> (inout [Float]) -> Void = LinearRateConverter.to48k
    ) {
        self.graph = graph
        self.makeConverter = makeConverter
    }

    public func start(
        captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]
    ) throws {
        let generation = try control.withLock { control -> Int? in
            guard !control.running else { return nil }
            control.captured = captured
            control.render = render
            try rebuild(&control)
            control.running = true
            control.interrupted = false
            control.pumping = true
            control.generation += 1
            return control.generation
        }
        if let generation { launchPump(generation) }
    }

    public func stop() {
        let wasPumping = control.withLock { control -> Bool in
            guard control.running else { return false }
            control.running = false
            control.captured = nil
            control.render = nil
            graph.stop()
            graph.teardown()
            defer { control.pumping = false }
            return control.pumping
        }
        if wasPumping { pumpDone.wait() }
    }

    /// An interruption began (`AVAudioSession.interruptionNotification`): the graph stops.
    public func interruptionBegan() {
        control.withLock { control in
            guard control.running, !control.interrupted else { return }
            control.interrupted = true
            graph.stop()
        }
    }

    /// The interruption ended: the graph starts again, rebuilt if the hardware changed meanwhile.
    public func interruptionEnded() {
        control.withLock { control in
            guard control.running, control.interrupted else { return }
            control.interrupted = false
            if (try? graph.start()) == nil { try? rebuild(&control) }
        }
    }

    /// The hardware changed under the graph (`AVAudioEngineConfigurationChange`, a route with
    /// another format, the media services reset): it is rebuilt for the new hardware and
    /// started again, unless an interruption holds it.
    public func hardwareChanged() {
        control.withLock { control in
            guard control.running else { return }
            try? rebuild(&control)
            if control.interrupted { graph.stop() }
        }
    }

    /// Whether audio runs (started and not interrupted).
    public var isRunning: Bool { control.withLock { $0.running && !$0.interrupted } }
    /// How many times the graph was built since this was made.
    public var builds: Int { control.withLock { $0.rebuilds } }
    /// The microphone's rate as the graph last reported it.
    public var captureRate: Double { control.withLock { $0.captureRate } }

    /// Takes the graph down and builds it again for the hardware as it is now. Both rings are
    /// emptied while nothing uses them (the graph stopped, the pump waiting for the lock).
    private func rebuild(_ control: inout Control) throws {
        graph.stop()
        graph.teardown()
        microphone.skipAll()
        speaker.skipAll()
        let rate = try graph.build(microphone: microphone, speaker: speaker)
        control.captureRate = rate
        control.convert = rate == 48_000 ? nil : makeConverter(rate)
        control.rebuilds += 1
        try graph.start()
    }

    private func launchPump(_ generation: Int) {
        let thread = Thread { [self] in
            var scratch = [Float](repeating: 0, count: microphone.capacity)
            let microseconds = UInt32(Self.pumpPeriod.components.attoseconds / 1_000_000_000_000)
            while pass(&scratch, generation) { usleep(microseconds) }
            pumpDone.signal()
        }
        thread.name = "switchboard.audio-pump"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// One pass of the pump: the microphone's samples to the session, the session's to the
    /// speaker ring. False once stopped.
    private func pass(_ scratch: inout [Float], _ generation: Int) -> Bool {
        control.withLock { control in
            guard control.running, control.generation == generation else { return false }
            let count = scratch.withUnsafeMutableBufferPointer {
                microphone.read(into: $0.baseAddress!, count: $0.count)
            }
            if count > 0, let captured = control.captured {
                var samples = Array(scratch[0..<count])
                control.convert?(&samples)
                captured(samples)
            }
            let target = speaker.largestRead + Self.speakerLead
            let need = min(target - speaker.available, speaker.space)
            if need > 0, let render = control.render, !control.interrupted {
                speaker.write(render(need))
            }
            return true
        }
    }
}

/// A linear-interpolation rate converter to 48 kHz, keeping its position across pieces: the
/// default for graphs whose microphone runs at another rate (tests, platforms without a
/// converter of their own).
public struct LinearRateConverter: Sendable {
    let step: Double
    var position = 0.0
    var last: Float = 0

    public init(from rate: Double) { step = rate / 48_000 }

    /// A converter closure for `rate`, for ``RealtimeRelayAudioIO``.
    public static func to48k(_ rate: Double) -> (inout [Float]) -> Void {
        var converter = LinearRateConverter(from: rate)
        return { converter.convert(&$0) }
    }

    /// Replaces `samples` (at the source rate) with the same stretch of sound at 48 kHz.
    public mutating func convert(_ samples: inout [Float]) {
        var out: [Float] = []
        out.reserveCapacity(Int(Double(samples.count) / step) + 2)
        // `position` counts from `last` (index -1) into this piece.
        while position < Double(samples.count) - 1 + 1e-9 {
            let index = Int(position.rounded(.down)), fraction = Float(position - Double(index))
            let a = index < 0 ? last : samples[index]
            let b = samples[min(index + 1, samples.count - 1)]
            out.append(a + (b - a) * fraction)
            position += step
        }
        position -= Double(samples.count)
        if let final = samples.last { last = final }
        samples = out
    }
}
