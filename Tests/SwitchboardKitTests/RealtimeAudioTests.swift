import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardTesting

/// A stand-in for the phone's audio hardware: a thread that, every 10 ms, writes 10 ms of a
/// counting signal (at the current rate) into the microphone ring and takes 480 samples from
/// the speaker ring, as AVAudioEngine's callbacks would. Its rate can change, as a route with
/// another sample rate changes it, and then it stops until it is rebuilt.
private final class FakeHardware: RealtimeAudioGraph, Sendable {
    private struct State {
        var rate = 48_000.0
        var microphone: AudioRing?
        var speaker: AudioRing?
        var running = false
        var alive = true
        var builds = 0
        var played = 0
        var silent = 0
    }

    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            var buffer = [Float](repeating: 0, count: 480)
            var next: Float = 0
            while state.withLock({ $0.alive }) {
                let (rate, microphone, speaker, running) = state.withLock {
                    ($0.rate, $0.microphone, $0.speaker, $0.running)
                }
                if running, let microphone, let speaker {
                    var input = [Float](repeating: 0, count: Int(rate / 100))
                    for index in input.indices {
                        input[index] = next
                        next += 1
                    }
                    input.withUnsafeBufferPointer { _ = microphone.write($0.baseAddress!, count: $0.count) }
                    let got = buffer.withUnsafeMutableBufferPointer { speaker.read(into: $0.baseAddress!, count: 480) }
                    state.withLock {
                        $0.played += got
                        $0.silent += 480 - got
                    }
                }
                usleep(10_000)
            }
            done.signal()
        }
        thread.start()
    }

    func shutDown() {
        state.withLock { $0.alive = false }
        done.wait()
    }

    /// A new route at another rate: the engine stops by itself, as AVAudioEngine does.
    func changeRoute(to rate: Double) {
        state.withLock {
            $0.rate = rate
            $0.running = false
        }
    }

    var builds: Int { state.withLock { $0.builds } }
    var running: Bool { state.withLock { $0.running } }
    var played: Int { state.withLock { $0.played } }

    func build(microphone: AudioRing, speaker: AudioRing) throws -> Double {
        state.withLock {
            $0.microphone = microphone
            $0.speaker = speaker
            $0.builds += 1
            return $0.rate
        }
    }
    func start() throws { state.withLock { $0.running = true } }
    func stop() { state.withLock { $0.running = false } }
    func teardown() {
        state.withLock {
            $0.microphone = nil
            $0.speaker = nil
        }
    }
}

/// The session's side: what it was given from the microphone, and what it was asked to play.
private final class SessionSide: Sendable {
    private let state = Mutex((captured: 0, asked: 0))
    var captured: Int { state.withLock { $0.captured } }
    var asked: Int { state.withLock { $0.asked } }
    func take(_ samples: [Float]) { state.withLock { $0.captured += samples.count } }
    func give(_ count: Int) -> [Float] {
        state.withLock { $0.asked += count }
        return [Float](repeating: 0.25, count: count)
    }
}

@Suite("Real-time-safe audio: the lock-free ring and the pump", .timeLimit(.minutes(2)))
struct RealtimeAudioTests {
    /// One producer thread and one consumer thread, chunks of every size, a ring far smaller
    /// than the stream: every sample arrives once, in order.
    @Test func aProducerAndAConsumerThreadPassEverySampleInOrder() async {
        let ring = AudioRing(capacity: 1000)
        #expect(ring.capacity == 1024)
        let total = 2_000_000
        let producer = Thread {
            var next = 0
            var chunk = [Float](repeating: 0, count: 700)
            var size = 1
            while next < total {
                let n = min(size, total - next)
                for index in 0..<n { chunk[index] = Float(next + index) }
                var sent = 0
                while sent < n {
                    let wrote = chunk.withUnsafeBufferPointer { ring.write($0.baseAddress! + sent, count: n - sent) }
                    sent += wrote
                    if wrote == 0 { sched_yield() }
                }
                next += n
                size = size % 697 + 1
            }
        }
        let result = Mutex((received: 0, wrong: 0))
        let finished = DispatchSemaphore(value: 0)
        let consumer = Thread {
            var expected = 0
            var chunk = [Float](repeating: 0, count: 1024)
            var size = 3
            var wrong = 0
            while expected < total {
                let got = chunk.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: size) }
                for index in 0..<got where chunk[index] != Float(expected + index) { wrong += 1 }
                expected += got
                if got == 0 { sched_yield() }
                size = size % 1021 + 1
            }
            result.withLock { $0 = (expected, wrong) }
            finished.signal()
        }
        producer.start()
        consumer.start()
        let done = await offPool { finished.wait(timeout: .now() + 60) == .success }
        #expect(done)
        let (received, wrong) = result.withLock { $0 }
        #expect(received == total && wrong == 0, "\(received) received, \(wrong) out of order")
        #expect(ring.available == 0)
    }

    @Test func aFullRingKeepsWhatFitsAndAnEmptyOneReadsNothing() {
        let ring = AudioRing(capacity: 8)
        #expect(ring.write([1, 2, 3, 4, 5, 6]) == 6)
        #expect(ring.write([7, 8, 9, 10]) == 2, "two fit, two are dropped")
        var out = [Float](repeating: 0, count: 10)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 10) } == 8)
        #expect(Array(out[0..<8]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 4) } == 0)
        // Wrapping around the end.
        #expect(ring.write([11, 12, 13, 14, 15]) == 5)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: 5) } == 5)
        #expect(Array(out[0..<5]) == [11, 12, 13, 14, 15])
    }

    @Test func linearConversionKeepsTheDurationAndTheLineAcrossPieces() {
        var converter = LinearRateConverter(from: 16_000)
        var total: [Float] = []
        var next: Float = 0
        for size in [160, 1, 7, 320, 12] {
            var piece = (0..<size).map { index in next + Float(index) }
            next += Float(size)
            converter.convert(&piece)
            total += piece
        }
        // 500 samples at 16 kHz are 1,500 at 48 kHz (less the last step, not yet reached).
        #expect(abs(total.count - 1498) <= 1, "\(total.count)")
        // A ramp stays a ramp: each 48 kHz sample is a third of a 16 kHz step on.
        let steps = zip(total, total.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { abs($0 - 1.0 / 3) < 1e-3 }, "\(steps.prefix(8))")
    }

    /// The call's audio survives a route change to another sample rate: the graph is rebuilt
    /// for the new hardware, the microphone's samples keep reaching the session (converted to
    /// 48 kHz), and the speaker keeps being fed.
    @Test func aRouteChangeRebuildsTheGraphAndTheAudioGoesOn() async throws {
        let hardware = FakeHardware()
        defer { hardware.shutDown() }
        let io = RealtimeRelayAudioIO(graph: hardware)
        let session = SessionSide()
        try io.start(captured: { session.take($0) }, render: { session.give($0) })
        defer { io.stop() }
        #expect(await eventually { session.captured >= 48_000 / 5 && hardware.played >= 48_000 / 5 }, "200 ms flowed")
        #expect(io.builds == 1 && io.captureRate == 48_000)

        // Bluetooth connects: 16 kHz, and the engine stops until it is rebuilt.
        hardware.changeRoute(to: 16_000)
        io.hardwareChanged()
        #expect(io.builds == 2 && io.captureRate == 16_000 && hardware.running)
        let (captured, played) = (session.captured, hardware.played)
        #expect(
            await eventually { session.captured >= captured + 48_000 / 5 && hardware.played >= played + 48_000 / 5 },
            "200 ms more flowed after the change (converted to 48 kHz)")

        // A GSM call interrupts: nothing flows; when it ends, audio resumes.
        io.interruptionBegan()
        #expect(!io.isRunning && !hardware.running)
        io.interruptionEnded()
        #expect(io.isRunning && hardware.running)
        let resumed = session.captured
        #expect(await eventually { session.captured >= resumed + 48_000 / 10 })
        #expect(session.asked > 0)
    }

    @Test func stopEndsThePumpAndAStartAfterItRunsAgain() async throws {
        let hardware = FakeHardware()
        defer { hardware.shutDown() }
        let io = RealtimeRelayAudioIO(graph: hardware)
        let session = SessionSide()
        for _ in 0..<3 {
            try io.start(captured: { session.take($0) }, render: { session.give($0) })
            let before = session.captured
            #expect(await eventually { session.captured > before })
            io.stop()
            #expect(!io.isRunning && !hardware.running)
        }
        let after = session.captured
        try? await Task.sleep(for: .milliseconds(50))
        #expect(session.captured == after, "nothing reaches the session once stopped")
        #expect(io.builds == 3)
    }
}
