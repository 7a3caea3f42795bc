import Foundation
import Testing
@testable import SwitchboardKit

/// A tone's amplitude in `samples` by correlation over a whole number of periods (one second of
/// signal: every whole-hertz frequency fits), skipping the filter's start.
func amplitude(of frequency: Double, in samples: [Float], sampleRate: Double, skip: Int) -> Double {
    let count = Int(sampleRate)
    precondition(samples.count >= skip + count)
    var re = 0.0, im = 0.0
    for index in 0..<count {
        let phase = 2 * Double.pi * frequency * Double(index) / sampleRate
        let value = Double(samples[skip + index])
        re += value * cos(phase)
        im += value * sin(phase)
    }
    return 2 * (re * re + im * im).squareRoot() / Double(count)
}

func tone(_ frequency: Double, sampleRate: Double, seconds: Double, level: Double = 0.5) -> [Float] {
    (0..<Int(sampleRate * seconds)).map { Float(level * sin(2 * Double.pi * frequency * Double($0) / sampleRate)) }
}

func decibels(_ ratio: Double) -> Double { 20 * log10(ratio) }

@Suite("The relay's resampler (8 kHz ↔ 48 kHz)", .timeLimit(.minutes(2)))
struct AudioResamplerTests {
    @Test(arguments: [300.0, 1000, 2000, 3000, 3400])
    func theTelephoneBandPassesFlatDownward(frequency: Double) {
        var down = AudioResampler.Downsampler()
        let narrow = down.process(tone(frequency, sampleRate: 48_000, seconds: 1.2))
        #expect(narrow.count == 9_600)
        let gain = amplitude(of: frequency, in: narrow, sampleRate: 8_000, skip: 400) / 0.5
        #expect(abs(decibels(gain)) < 0.1, "\(frequency) Hz: \(decibels(gain)) dB")
    }

    @Test(arguments: [300.0, 1000, 2000, 3000, 3400])
    func theTelephoneBandPassesFlatUpward(frequency: Double) {
        var up = AudioResampler.Upsampler()
        let wide = up.process(tone(frequency, sampleRate: 8_000, seconds: 1.2))
        #expect(wide.count == 57_600)
        let gain = amplitude(of: frequency, in: wide, sampleRate: 48_000, skip: 2_400) / 0.5
        #expect(abs(decibels(gain)) < 0.1, "\(frequency) Hz: \(decibels(gain)) dB")
    }

    /// Content above the 8 kHz rate's Nyquist frequency must not fold back into the band.
    @Test(
        arguments: [(5000.0, 3000.0), (6000, 2000), (7000, 1000), (9000, 1000), (11000, 3000), (4600, 3400)]
            as [(Double, Double)])
    func whatWouldAliasIsStopped(input: Double, alias: Double) {
        var down = AudioResampler.Downsampler()
        let narrow = down.process(tone(input, sampleRate: 48_000, seconds: 1.2))
        let leaked = amplitude(of: alias, in: narrow, sampleRate: 8_000, skip: 400) / 0.5
        #expect(decibels(leaked) < -60, "\(input) Hz folds to \(alias) Hz at \(decibels(leaked)) dB")
    }

    /// Upsampling must not leave images of the band at multiples of 8 kHz.
    @Test(
        arguments: [(1000.0, [7000.0, 9000, 15000, 17000, 23000]), (3000.0, [5000.0, 11000, 13000, 19000])]
            as [(Double, [Double])])
    func imagesAreStopped(frequency: Double, images: [Double]) {
        var up = AudioResampler.Upsampler()
        let wide = up.process(tone(frequency, sampleRate: 8_000, seconds: 1.2))
        for image in images {
            let level = amplitude(of: image, in: wide, sampleRate: 48_000, skip: 2_400) / 0.5
            #expect(decibels(level) < -60, "\(frequency) Hz leaves an image at \(image) Hz: \(decibels(level)) dB")
        }
    }

    @Test func aStreamCutIntoAnyPiecesComesOutAsIfWhole() {
        let input = tone(1234, sampleRate: 48_000, seconds: 0.25)
        var whole = AudioResampler.Downsampler()
        let expected = whole.process(input)
        var pieces = AudioResampler.Downsampler()
        var output: [Float] = []
        var offset = 0
        // Sizes that are no multiple of 6 (an audio engine's buffers are whatever they are).
        for size in [1, 5, 7, 480, 1023, 4096, 13].cycled(until: input.count) {
            let end = min(input.count, offset + size)
            output += pieces.process(Array(input[offset..<end]))
            offset = end
            if offset == input.count { break }
        }
        #expect(output.count == expected.count)
        #expect(zip(output, expected).allSatisfy { abs($0 - $1) < 1e-6 })

        let narrow = tone(700, sampleRate: 8_000, seconds: 0.25)
        var upWhole = AudioResampler.Upsampler()
        let upExpected = upWhole.process(narrow)
        var upPieces = AudioResampler.Upsampler()
        let upOutput = stride(from: 0, to: narrow.count, by: 160).flatMap {
            upPieces.process(Array(narrow[$0..<min(narrow.count, $0 + 160)]))
        }
        #expect(upOutput.count == upExpected.count)
        #expect(zip(upOutput, upExpected).allSatisfy { abs($0 - $1) < 1e-6 })
    }

    @Test func aRoundTripKeepsSpeechBandAudioAndDelaysItBy287SamplesAt48kHz() {
        let input = tone(440, sampleRate: 48_000, seconds: 1.5, level: 0.8)
        var down = AudioResampler.Downsampler(), up = AudioResampler.Upsampler()
        let output = up.process(down.process(input))
        #expect(output.count == input.count)
        // Two filters of 143.5 samples' delay each: the round trip lines up 287 samples later.
        let delay = 287
        var error = 0.0, signal = 0.0
        for index in 4_800..<(input.count - 1) where index >= delay {
            let difference = Double(output[index]) - Double(input[index - delay])
            error += difference * difference
            signal += Double(input[index - delay]) * Double(input[index - delay])
        }
        let snr = 10 * log10(signal / error)
        #expect(snr > 40, "round trip SNR \(snr) dB")
    }

    @Test func sixteenBitSamplesSaturateInsteadOfWrapping() {
        #expect(AudioSamples.int16([1.5, -1.5, 0.5, 0]) == [32767, -32768, 16384, 0])
        #expect(AudioSamples.samples(AudioSamples.bytes([1, -1, 0x1234])) == [1, -1, 0x1234])
        #expect(AudioSamples.bytes([0x1234]) == [0x34, 0x12])
    }
}

extension Array {
    /// The elements over and over, enough of them to cover `total` if each is a size.
    func cycled(until total: Int) -> [Element] where Element == Int {
        var result: [Int] = []
        var sum = 0
        while sum < total {
            for size in self {
                result.append(size)
                sum += size
            }
        }
        return result
    }
}

@Suite("The relay's jitter buffer", .timeLimit(.minutes(1)))
struct JitterBufferTests {
    static let ms: UInt64 = 1_000_000
    static func frame(_ value: Int16) -> [Int16] { [Int16](repeating: value, count: 160) }

    /// Frames arriving at `arrivals` (ms) and a pull every 20 ms from `start` (ms): what played,
    /// and the most frames that ever waited.
    @discardableResult
    static func run(
        _ buffer: inout JitterBuffer, arrivals: [Double], pulls: Int, start: Double
    ) -> (played: [[Int16]], deepest: Int) {
        var played: [[Int16]] = []
        var next = 0, deepest = 0
        for pull in 0..<pulls {
            let now = start + Double(pull) * 20
            while next < arrivals.count, arrivals[next] <= now {
                buffer.push(frame(Int16(next + 1)), at: UInt64(arrivals[next] * 1e6))
                deepest = max(deepest, buffer.depth)
                next += 1
            }
            played.append(buffer.pull(samples: 160, at: UInt64(now * 1e6)))
        }
        return (played, deepest)
    }

    @Test func aSteadyStreamPlaysEveryFrameInOrderAboutFortyMillisecondsAfterItArrives() {
        var buffer = JitterBuffer()
        let (played, deepest) = Self.run(&buffer, arrivals: (0..<100).map { Double($0) * 20 }, pulls: 110, start: 1)
        #expect(buffer.targetFrames == 3)
        #expect(deepest == 3)
        let first = played.firstIndex { $0[0] == 1 }!, last = played.firstIndex { $0[0] == 100 }!
        #expect(played[first...last].map { $0[0] } == (1...100).map(Int16.init), "every frame, in order, with no gap")
        #expect(buffer.statistics.played == 100 && buffer.statistics.dropped == 0)
        // Frame 1 arrived at 0 ms and played at the pull at 41 ms, once three were in.
        #expect(first == 2)
    }

    @Test func aBurstAfterAStallIsTrimmedSoTheDelayDoesNotBuildUp() {
        var buffer = JitterBuffer()
        // Steady, then 400 ms of nothing, then those 20 frames at once, then steady again.
        var arrivals = (0..<50).map { Double($0) * 20 }
        arrivals += (50..<70).map { _ in 1400.0 }
        arrivals += (70..<150).map { Double($0) * 20 }
        // Pulls until the last frame arrived (at 2,980 ms).
        let (played, deepest) = Self.run(&buffer, arrivals: arrivals, pulls: 150, start: 1)
        #expect(buffer.statistics.dropped > 0)
        // The burst was cut down to the target (plus at most two frames) as it arrived.
        #expect(deepest <= buffer.targetFrames + 2 || buffer.statistics.dropped >= 20 - 12, "\(deepest) frames waited")
        #expect(deepest < 20, "the whole burst waited: \(deepest) frames")
        // Once past the burst it plays the newest frames in order, the stale part skipped.
        let tail = played.suffix(20).map { $0[0] }
        #expect(tail.allSatisfy { $0 > 70 })
        #expect(zip(tail, tail.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func aJitteryNetworkRaisesTheTargetAndASteadyOneLowersItAgain() {
        var buffer = JitterBuffer()
        // ±40 ms of deterministic jitter around the 20 ms schedule (a fixed pattern).
        let pattern: [Double] = [0, 35, -20, 40, 5, -35, 25, -10, 38, -30]
        let arrivals = (0..<200).map { max(0, Double($0) * 20 + 40 + pattern[$0 % pattern.count]) }.sorted()
        _ = Self.run(&buffer, arrivals: arrivals, pulls: 205, start: 1)
        #expect(buffer.targetFrames > 3, "target \(buffer.targetFrames) with jitter \(buffer.jitterMilliseconds) ms")
        #expect(buffer.targetFrames <= 10)
        let raised = buffer.targetFrames
        // Concealment stays rare once the target has grown (after the first second).
        #expect(Double(buffer.statistics.concealed) / Double(buffer.statistics.received) < 0.1)
        let steady = (0..<600).map { 4200 + Double($0) * 20 }
        _ = Self.run(&buffer, arrivals: steady, pulls: 610, start: 4201)
        #expect(buffer.targetFrames < raised)
        #expect(buffer.targetFrames == 3)
    }

    @Test func aGapIsConcealedFadingThenSilentAndPlayResumesAfterRefilling() {
        var buffer = JitterBuffer()
        for index in 0..<3 { buffer.push(Self.frame(1000), at: UInt64(index) * 20 * Self.ms) }
        for _ in 0..<3 { #expect(buffer.pull(samples: 160, at: 0) == Self.frame(1000)) }
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(500))
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(250))
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(125))
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(0))
        #expect(buffer.statistics.concealed == 4)
        // Arrivals kept their pace (the speaker ran ahead): one frame is not enough to resume,
        // it waits for the target again.
        buffer.push(Self.frame(7), at: 60 * Self.ms)
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(0))
        buffer.push(Self.frame(8), at: 80 * Self.ms)
        buffer.push(Self.frame(9), at: 100 * Self.ms)
        #expect(buffer.pull(samples: 160, at: 0) == Self.frame(7))
    }

    @Test func silenceBeforeTheFirstFrameIsNotALoss() {
        var buffer = JitterBuffer()
        for _ in 0..<10 { _ = buffer.pull(samples: 160, at: 0) }
        #expect(buffer.statistics.concealed == 0)
    }
}
